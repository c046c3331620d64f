"""The policy lab: proposals to change the rules, counterfactual replays of past weeks under them.

It sits between the archive and the weekly process: reports ──> policy ──> committee ──> allocations.
"""
from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class PolicyConfig(AppConfig):
    name = "policy"
    verbose_name = _("Policy lab")

    def ready(self) -> None:
        # policy depends on committee, never the other way: it subscribes to the committee's signals.
        from committee import signals
        from policy import receivers, texts  # noqa: F401 (texts registers its codes)

        signals.cycle_opened.connect(receivers.on_cycle_opened, dispatch_uid="policy.cycle_opened")
        signals.clock_ticked.connect(receivers.on_clock_ticked, dispatch_uid="policy.clock_ticked")
        signals.demo_seeded.connect(receivers.on_demo_seeded, dispatch_uid="policy.demo_seeded")

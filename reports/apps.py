from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ReportsConfig(AppConfig):
    name = "reports"
    verbose_name = _("Reports")

    def ready(self) -> None:
        # Every chart is drawn on plotly_white, plotly's default here rather than named in each figure's layout:
        # plotly deep-copies and re-validates a template a layout names (25-70 ms a figure, most of a dashboard
        # page's time), and gives each new figure its default template as it is.
        import plotly.io as pio

        pio.templates.default = "plotly_white"

        # reports depends on committee, never the other way: the archive subscribes to its signals.
        from committee import signals
        from governed import signals as governed_signals
        from policy import signals as policy_signals
        from reports import receivers
        from reports.executive import demo

        signals.cycle_transition.connect(receivers.on_cycle_transition, dispatch_uid="reports.cycle_transition")
        signals.demo_seeded.connect(demo.on_demo_seeded, dispatch_uid="reports.executive.demo_seeded")
        policy_signals.proposal_step.connect(receivers.on_proposal_step, dispatch_uid="reports.proposal_step")
        governed_signals.policy_changed.connect(receivers.on_policy_changed, dispatch_uid="reports.policy_changed")

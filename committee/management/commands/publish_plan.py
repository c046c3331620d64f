from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.template.defaultfilters import pluralize

from allocations import selectors as allocation_selectors
from committee import services
from committee.management.arguments import cycle_for_week, refusals_as_command_errors, user_named
from committee.models import CommitteeSeat, SeatRole


class Command(BaseCommand):
    help = (
        "Publish a finalized week's allocation: the engine places the grants in ranking order and the "
        "windows become the week's next plan version (a correction of a published week needs --reason)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--week", required=True, help="ISO week of the cycle, e.g. 2026-W49")
        parser.add_argument("--as-user", help="the chair's username (default: the one active chair)")
        parser.add_argument("--reason", default="", help="why a published plan is corrected")

    def handle(self, *args: Any, **options: Any) -> None:
        cycle = cycle_for_week(options["week"])
        actor = self._chair(options["as_user"])
        with refusals_as_command_errors():
            plan = services.cycle_publish(actor=actor, cycle=cycle, reason=options["reason"])
        windows = allocation_selectors.plan_window_list(plan=plan).count()
        self.stdout.write(self.style.SUCCESS(
            f"Week {plan.week} is published: plan version {plan.version} (change {plan.change_seq}), "
            f"{windows} window{pluralize(windows)}."
        ))
        for explanation in plan.explanations.all():
            self.stdout.write(f"  request {explanation.request_ref}: {explanation.display_text()}")

    def _chair(self, username: str | None) -> Any:
        if username:
            return user_named(username)
        chairs = list(CommitteeSeat.objects.active().filter(role=SeatRole.CHAIR).select_related("user"))
        if len(chairs) != 1:
            raise CommandError(f"{len(chairs)} active chairs: name one with --as-user.")
        return chairs[0].user

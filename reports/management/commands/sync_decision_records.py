"""Write the decision record of every finalized or published week that lacks one or is behind its records."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.template.defaultfilters import pluralize

from committee.models import CycleStatus, ReviewCycle
from reports import records
from reports.services import decision_record_sync


class Command(BaseCommand):
    help = (
        "Regenerate the decision record of each finalized or published week (or only --week) from the "
        "committee's records. Repairs a week whose record was never written; a week that is up to date gets "
        "no revision. Exits 1 if a record cannot be written, naming the week and why."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--week", help="Only this ISO week, e.g. 2026-W49.")

    def handle(self, *args: Any, **options: Any) -> None:
        cycles = ReviewCycle.objects.filter(
            status__in=[CycleStatus.FINALIZED, CycleStatus.PUBLISHED]
        )
        if options.get("week"):
            cycles = cycles.filter(week=options["week"])
            if not cycles.exists():
                raise CommandError(f"No finalized or published week {options['week']}.")
        failed = []
        for cycle in cycles.order_by("starts_at"):
            try:
                revision = decision_record_sync(cycle=cycle)
            except ValidationError as exc:
                failed.append(cycle.week)
                self.stderr.write(f"{cycle.week}: not written: {' '.join(exc.messages)}")
                continue
            slug = records.decision_record_slug(cycle.week)
            if revision is None:
                self.stdout.write(f"{cycle.week}: {slug} is up to date")
            else:
                self.stdout.write(f"{cycle.week}: {slug} revision {revision.number} written")
        if failed:
            raise CommandError(
                f"{len(failed)} week{pluralize(len(failed))} without a current record: {', '.join(failed)}"
            )

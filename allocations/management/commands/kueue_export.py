from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from allocations.adapters.kueue import BORROWING_MODES, KueuePolicy
from allocations.exports import kueue_yaml
from allocations.models import Cluster


class Command(BaseCommand):
    help = (
        "Print a cluster's Kueue objects (priority classes, cohort, flavors, ClusterQueues) as YAML for "
        "`kubectl apply --server-side -f -`; the policy options are kueue_sync's."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--cluster", required=True, help="cluster slug")
        parser.add_argument("--at", help="ISO 8601 time with an offset (default: now)")
        parser.add_argument("--cohort", help="the Cohort's name (default: docket-<cluster>)")
        parser.add_argument("--standard-lend-pct", type=int, default=100, help="standard GPUs lent while idle (100)")
        parser.add_argument("--priority-lend-pct", type=int, default=0, help="priority GPUs lent while idle (0)")
        parser.add_argument("--borrowing", choices=BORROWING_MODES, default="elastic", help="who may borrow")

    def handle(self, *args: Any, **options: Any) -> None:
        cluster = Cluster.objects.filter(slug=options["cluster"]).first()
        if cluster is None:
            raise CommandError(f"No cluster {options['cluster']!r}.")
        at = timezone.now()
        if options["at"]:
            parsed = parse_datetime(options["at"])
            if parsed is None or parsed.tzinfo is None:
                raise CommandError(f"--at must be an ISO 8601 time with an offset, e.g. 2026-12-02T12:00:00Z; "
                                   f"got {options['at']!r}.")
            at = parsed
        try:
            policy = KueuePolicy(
                standard_lend_pct=options["standard_lend_pct"],
                priority_lend_pct=options["priority_lend_pct"],
                borrowing=options["borrowing"],
            )
            text = kueue_yaml(cluster=cluster, at=at, cohort=options["cohort"], policy=policy)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(text, ending="")

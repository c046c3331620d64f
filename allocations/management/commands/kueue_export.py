from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from allocations.exports import kueue_yaml
from allocations.models import Cluster


class Command(BaseCommand):
    help = "Print a cluster's Kueue quotas (ResourceFlavors and ClusterQueues) as YAML for `kubectl apply -f -`."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--cluster", required=True, help="cluster slug")
        parser.add_argument("--at", help="ISO 8601 time with an offset (default: now)")

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
        self.stdout.write(kueue_yaml(cluster=cluster, at=at), ending="")

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from allocations import services
from allocations.models import Cluster, SchedulerClient


class Command(BaseCommand):
    help = (
        "Register a cluster's scheduler and print its API token once (only a hash is stored). "
        "With --rotate, issue a new token for an existing scheduler; the old one stops working at once, "
        "or with --overlap-hours N after N more hours (so the scheduler can be switched without a gap)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--cluster", required=True, help="cluster slug")
        parser.add_argument("--name", required=True, help="a name for the scheduler, e.g. slurm-sync")
        parser.add_argument("--rotate", action="store_true", help="replace the token of an existing scheduler")
        parser.add_argument("--overlap-hours", type=float, default=0.0,
                            help="with --rotate: hours the old token keeps working (default 0: it stops now)")

    def handle(self, *args: Any, **options: Any) -> None:
        cluster = Cluster.objects.filter(slug=options["cluster"]).first()
        if cluster is None:
            known = ", ".join(Cluster.objects.values_list("slug", flat=True)) or "none"
            raise CommandError(f"No cluster {options['cluster']!r} (known: {known}).")
        overlap_hours = options["overlap_hours"]
        if not 0 <= overlap_hours <= 24 * 30:
            raise CommandError("--overlap-hours must be between 0 and 720 (30 days).")
        if overlap_hours and not options["rotate"]:
            raise CommandError("--overlap-hours goes with --rotate (a new scheduler has no old token).")
        if options["rotate"]:
            client = SchedulerClient.objects.filter(cluster=cluster, name=options["name"]).first()
            if client is None:
                raise CommandError(f"Cluster {cluster.slug} has no scheduler named {options['name']!r}.")
            issued = services.scheduler_client_rotate(client=client, overlap=timedelta(hours=overlap_hours))
        else:
            try:
                issued = services.scheduler_client_create(cluster=cluster, name=options["name"])
            except ValidationError as exc:
                raise CommandError(" ".join(exc.messages)) from None
        self.stderr.write(
            f"Token for scheduler {issued.client.name!r} of cluster {cluster.slug}. "
            "It is shown this once; store it where the scheduler reads it (e.g. DOCKET_TOKEN)."
        )
        if issued.client.previous_token_expires_at:
            until = issued.client.previous_token_expires_at.strftime("%Y-%m-%d %H:%M UTC")
            self.stderr.write(f"The old token keeps working until {until}.")
        self.stdout.write(issued.token)

"""Docket's own Prometheus gauges, computed from the database at each scrape (core/metrics.py serves them).

Every number comes from the database, not from a process's memory, so each gunicorn worker answers
the same and a restart loses nothing. A scrape costs a constant number of queries (at most six), whatever
the number of windows, clusters or messages. If the database cannot be read, the scrape still
answers, with `docket_metrics_database_up 0` and none of the other gauges.

Names (docs/operations.md has the alerts built on them):
- docket_outbox_backlog                       messages not yet done
- docket_outbox_oldest_waiting_age_seconds    age of the oldest of them (0 when there is none)
- docket_windows{state}                       windows not yet ended and not withdrawn, by their latest sync
                                              state: in_sync, short, failed, or unreported (no report yet)
- docket_windows_next_start_seconds{state}    seconds until the earliest start among them (negative: started)
- docket_usage_report_age_seconds{cluster}    seconds since the cluster's scheduler last reported usage
- docket_cycle_state{week,state}              1 for the current cycle's state, 0 for the other states
- docket_notifications_waiting_over_a_day     notifications recorded more than a day ago that no digest
                                              has carried yet (Docket records no failed sends, so this
                                              is how a digest that does not go out shows)
- docket_build_info{version,django}           always 1
- docket_metrics_database_up                  1 when the queries above ran
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import datetime, timedelta

import django
from django.conf import settings
from django.db import DatabaseError
from django.db.models import Count, Max, Min, Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from allocations.models import AllocationWindow, Cluster, SyncState
from committee.models import CycleStatus, Notification, OutboxMessage, ReviewCycle

logger = logging.getLogger(__name__)

UNREPORTED = "unreported"
WINDOW_STATES = [*(state.value for state in SyncState), UNREPORTED]
NOTIFICATION_LATE_AFTER = timedelta(days=1)


def _outbox(now: datetime) -> list[Metric]:
    row = OutboxMessage.objects.filter(done_at__isnull=True).aggregate(count=Count("id"), oldest=Min("created_at"))
    backlog = GaugeMetricFamily("docket_outbox_backlog", "Outbox messages not yet done.")
    backlog.add_metric([], row["count"])
    oldest = GaugeMetricFamily(
        "docket_outbox_oldest_waiting_age_seconds", "Age of the oldest outbox message not yet done (0: none)."
    )
    oldest.add_metric([], max(0.0, (now - row["oldest"]).total_seconds()) if row["oldest"] else 0.0)
    return [backlog, oldest]


def _windows(now: datetime) -> list[Metric]:
    rows = (
        AllocationWindow.objects.filter(end__gt=now, withdrawal__isnull=True)
        .annotate(sync_state=Coalesce("sync_status__state", Value(UNREPORTED)))
        .values("sync_state")
        .annotate(count=Count("id"), first_start=Min("start"))
        .order_by()
    )
    by_state = {row["sync_state"]: row for row in rows}
    counts = GaugeMetricFamily(
        "docket_windows", "Windows not yet ended and not withdrawn, by their latest sync state.", labels=["state"]
    )
    starts = GaugeMetricFamily(
        "docket_windows_next_start_seconds",
        "Seconds until the earliest start of a window in this sync state (negative: it has started).",
        labels=["state"],
    )
    for state in WINDOW_STATES:
        row = by_state.get(state)
        counts.add_metric([state], row["count"] if row else 0)
        if row:
            starts.add_metric([state], (row["first_start"] - now).total_seconds())
    return [counts, starts]


def _usage(now: datetime) -> list[Metric]:
    ages = GaugeMetricFamily(
        "docket_usage_report_age_seconds",
        "Seconds since the cluster's scheduler last reported usage (no sample: never).",
        labels=["cluster"],
    )
    rows = Cluster.objects.annotate(last=Max("pools__usage_records__reported_at")).values_list("slug", "last")
    for slug, last in rows:
        if last is not None:
            ages.add_metric([slug], max(0.0, (now - last).total_seconds()))
    return [ages]


def _cycle() -> list[Metric]:
    """The current cycle: the earliest one not yet published (the one being worked on), else the latest."""
    cycles = ReviewCycle.objects.values_list("week", "status")
    current = cycles.exclude(status=CycleStatus.PUBLISHED).order_by("starts_at").first()
    current = current or cycles.order_by("-starts_at").first()
    gauge = GaugeMetricFamily(
        "docket_cycle_state", "1 for the current cycle's state, 0 for the other states.", labels=["week", "state"]
    )
    if current:
        week, status = current
        for state in CycleStatus:
            gauge.add_metric([week, state.value], 1 if state.value == status else 0)
    return [gauge]


def _notifications(now: datetime) -> list[Metric]:
    late = Notification.objects.filter(
        Q(digest__isnull=True, skipped=False) & Q(created_at__lt=now - NOTIFICATION_LATE_AFTER)
    ).count()
    gauge = GaugeMetricFamily(
        "docket_notifications_waiting_over_a_day",
        "Notifications recorded more than a day ago that no digest has carried yet.",
    )
    gauge.add_metric([], late)
    return [gauge]


def _build_info() -> Metric:
    info = GaugeMetricFamily(
        "docket_build_info", "Docket's release and Django's version.", labels=["version", "django"]
    )
    info.add_metric([settings.DOCKET_RELEASE or "unknown", django.get_version()], 1)
    return info


class DocketCollector(Collector):
    """Collected at each scrape; registered in its own registry by core.metrics (never at import)."""

    def collect(self) -> Iterator[Metric]:
        yield _build_info()
        up = GaugeMetricFamily("docket_metrics_database_up", "1 when Docket's gauges could be read from the database.")
        now = timezone.now()
        try:
            families = [*_outbox(now), *_windows(now), *_usage(now), *_cycle(), *_notifications(now)]
        except DatabaseError as exc:
            logger.warning("metrics: the database could not be read: %s", exc)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from families

"""A run over several weeks given back by its team (docs/release.md, docs/multi-week-runs.md): part of its GPUs, and
the run goes on with what it kept; all of them from an hour, and the run ends there: its later weeks are released,
for the schedulers (the windows API's commitments, read by the scheduler package as the scheduler sync does), the
forward calendar, the request page and the team's inbox."""

from __future__ import annotations

from datetime import timedelta

from django.urls import reverse
from rest_framework.test import APIClient

from allocations.models import Commitment, CommitmentState
from committee import selectors, services
from committee.models import LifecycleEvent, Notification, NotificationKind
from committee.services.notifications import notification_text
from docket_scheduler.base import parse_commitments, parse_windows, run_spans
from tests.allocations.plans import bearer, token_for
from tests.committee.test_multiweek_runs import publish_week, run_fields, windows_of
from tests.conftest import committed
from tests.factories import file_request


def test_a_run_given_back_in_part_goes_on_and_given_back_whole_from_an_hour_ends_there(world, client, clock):
    run = file_request(world, **run_fields(world))  # 16 GPUs, the week's last 48 hours, then two whole weeks
    window = windows_of(publish_week(world, (run, 8)))[run.pk]
    now = window.start + timedelta(hours=3)
    clock.move_to(now, tick=False)
    api, token = APIClient(), token_for(world.atlas)

    def scheduler_view():
        """What a scheduler sync holds for the run: its spans from the windows API, as docket-slurm-sync reads it."""
        body = api.get("/api/v1/windows/", {"cluster": "atlas"}, **bearer(token)).json()
        commitments = parse_commitments(body["commitments"])
        spans = run_spans([w for w in parse_windows(body["results"]) if w.request_id == run.pk], commitments)
        return [(c.state, c.gpu_count) for c in commitments], [(s.start, s.end) for s in spans]

    # Half of it from hour 10: the run goes on into its later weeks with the 8 GPUs it kept.
    services.window_release(actor=world.lead_a, gpu_request=run, gpu_count=8,
                            effective_from=window.start + timedelta(hours=10), now=now)
    weeks, spans = scheduler_view()
    assert weeks == [("committed", 8), ("committed", 8)]
    assert spans == [(window.start, Commitment.objects.get(request_ref=run.pk, week_number=3).end)]  # no gap

    # The rest from hour 20: the run ends at that hour, and no later week's plan places it again.
    hour = window.start + timedelta(hours=20)
    committed(services.window_release, actor=world.lead_a, gpu_request=run, gpu_count=8, effective_from=hour,
              reason="Converged.", now=now)
    assert set(Commitment.objects.filter(request_ref=run.pk).values_list("state", flat=True)) == {
        CommitmentState.RELEASED}
    weeks, spans = scheduler_view()
    assert weeks == [("released", 8), ("released", 8)] and spans == [(window.start, hour)]
    calendar = {c.pool.key: c for c in selectors.forward_calendar(now=now)}["atlas/a100"].weeks
    assert [w.committed_gpu_hours for w in calendar[:2]] == [0, 0]  # the run's weeks after this one are free
    client.force_login(world.member_a)
    page = client.get(reverse("committee:request-detail", args=[run.pk])).content.decode()
    assert page.count('class="commitment-released"') == 2
    event = LifecycleEvent.objects.filter(type="window.released").latest("id")
    later = [c.week for c in Commitment.objects.filter(request_ref=run.pk).order_by("week")]
    assert event.data["later_weeks_released"] == later
    told = notification_text(Notification.objects.filter(recipient=world.member_a,
                                                         kind=NotificationKind.WINDOW_EVENT).latest("id"))
    assert told.endswith(f"the run ends there, its later weeks ({later[0]}, {later[1]}) are released.")
    first = LifecycleEvent.objects.filter(type="window.released").earliest("id")
    assert first.data["later_weeks_released"] == []  # the half given back first ended nothing

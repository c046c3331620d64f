"""Either pool (issue 30, part 3): a request names other pools it could run on, each with its conversion; a grant is
placed on the pool that has room, that pool's scheduler reads the window, and every surface says where it went."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from allocations.engine import instant_param
from allocations.models import AllocationWindow
from committee import selectors, services
from committee.models import GpuRequest, RequestPoolOption
from governed.models import ChangeSource
from governed.services import policy_change_record
from policy.replay import replay
from policy.replay.overrides import replay_query_parse
from policy.selectors.replay import replay_before, replay_inputs_load, replay_parameters
from reports.models import Page
from reports.selectors import revision_latest
from tests.allocations.plans import bearer, token_for
from tests.committee.filing import form_data
from tests.committee.review_api import request_body
from tests.committee.reviewing import close, decide, score
from tests.factories import forecast_fields, request_fields, usage_fields


def file_either(world: Any, *, team: Any = None, pool_options: list[dict[str, Any]], **overrides: Any) -> GpuRequest:
    team = team or world.team_a
    actor = world.lead_a if team == world.team_a else world.member_b
    gpu_request = services.request_create(
        actor=actor, team=team, cycle=world.cycle, fields=request_fields(world, **overrides), usage=usage_fields(),
        forecast=forecast_fields(), pool_options=pool_options,
    )
    return services.request_submit(actor=actor, gpu_request=gpu_request)


def h100_twice_as_fast() -> None:
    policy_change_record(actor=None, changes={"pool.orion/h100.billing_weight": "2"},
                         effective_week="2026-W49", reason="An H100 does the work of two A100.",
                         source=ChangeSource.LAB)


def test_the_conversion_offered_keeps_the_gpus_and_scales_the_hours_by_the_pools_weights(world):
    h100_twice_as_fast()

    gpu_request = file_either(world, pool_options=[{"pool": world.h100, "gpu_count": None, "duration_hours": None}],
                              gpu_count=16, duration_hours=47)

    assert [(o.pool, o.gpu_count, o.duration_hours, o.position) for o in gpu_request.pool_options.all()] == [
        (world.h100, 16, 24, 1)  # 47 A100 hours are 23.5 H100 hours, rounded up
    ]
    edited = services.request_update(  # the team's own numbers win over the offer
        actor=world.lead_a, gpu_request=gpu_request, fields=request_fields(world, gpu_count=16, duration_hours=47),
        usage=usage_fields(), forecast=forecast_fields(), alternatives=[],
        pool_options=[{"pool": world.h100, "gpu_count": 12, "duration_hours": 30}],
    )
    assert [(o.gpu_count, o.duration_hours) for o in edited.pool_options.all()] == [(12, 30)]


@pytest.mark.parametrize(
    ("options", "key", "words"),
    [
        (lambda w: [{"pool": w.a100}], "pool_options.0.pool", "is the request's own pool"),
        (lambda w: [{"pool": w.h100}, {"pool": w.h100}], "pool_options.1.pool", "is named twice"),
        (lambda w: [{"pool": w.h100, "gpu_count": 0, "duration_hours": 8}], "pool_options.0.gpu_count",
         "a whole number from 1"),
        (lambda w: [{"pool": w.h100, "gpu_count": 4, "duration_hours": -3}], "pool_options.0.duration_hours",
         "a whole number from 1"),
        (lambda w: [{"pool": w.h100, "gpu_count": 33, "duration_hours": 8}], "pool_options.0.gpu_count",
         "orion/h100 has 32 GPUs"),
        (lambda w: [{"pool": w.h100, "gpu_count": 4, "duration_hours": 97}], "pool_options.0.duration_hours",
         "do not fit in the request's window of 96 hours"),
    ],
)
def test_a_bad_other_pool_is_refused_with_its_reason_and_nothing_is_saved(world, options, key, words):
    before = GpuRequest.objects.count()

    with pytest.raises(ValidationError) as refused:
        file_either(world, pool_options=[{"gpu_count": None, "duration_hours": None, **o} for o in options(world)])

    assert words in " ".join(refused.value.message_dict[key])
    assert GpuRequest.objects.count() == before and not RequestPoolOption.objects.exists()


def test_the_form_and_the_api_take_other_pools_and_refuse_bad_ones(world, client):
    client.force_login(world.lead_a)
    data = form_data(world, **{"pools-TOTAL_FORMS": "3", "pools-INITIAL_FORMS": "0", "pools-0-pool": world.h100.pk,
                               "pools-0-gpu_count": "", "pools-0-duration_hours": "", "pools-1-pool": world.a100.pk,
                               "pools-1-gpu_count": "4", "pools-1-duration_hours": "8"})
    refused = client.post(reverse("committee:request-create"), data)
    assert refused.status_code == 400
    assert "a100 is the request&#x27;s own pool" in refused.content.decode()
    assert not GpuRequest.objects.exists()

    data["pools-1-pool"] = ""
    saved = client.post(reverse("committee:request-create"), data)
    assert saved.status_code == 302
    gpu_request = GpuRequest.objects.get()
    assert [(o.pool, o.gpu_count, o.duration_hours) for o in gpu_request.pool_options.all()] == [(world.h100, 16, 48)]
    page = client.get(reverse("committee:request-detail", args=[gpu_request.pk])).content.decode()
    assert "orion/h100" in page and "16 GPUs for 48 h" in page

    api = APIClient()
    api.force_authenticate(world.lead_a)
    body = api.get(f"/api/v1/requests/{gpu_request.pk}/").json()
    assert body["pool_options"] == [{"pool": world.h100.pk, "pool_key": "orion/h100", "gpu_count": 16,
                                     "duration_hours": 48}]
    # The API: the same rules, answered 400 by field, nothing changed; then the team's own conversion is kept.
    put = request_body(world, alternatives=[], pool_options=[{"pool": world.h100.pk, "gpu_count": 40}])
    refused_api = api.put(f"/api/v1/requests/{gpu_request.pk}/", put, format="json")
    assert refused_api.status_code == 400
    assert "orion/h100 has 32 GPUs" in str(refused_api.json()["pool_options.0.gpu_count"])
    assert list(gpu_request.pool_options.values_list("gpu_count", flat=True)) == [16]
    put["pool_options"] = [{"pool": world.h100.pk, "gpu_count": 8, "duration_hours": 20}]
    saved_api = api.put(f"/api/v1/requests/{gpu_request.pk}/", put, format="json")
    assert saved_api.status_code == 200, saved_api.json()
    assert saved_api.json()["pool_options"] == [{"pool": world.h100.pk, "pool_key": "orion/h100", "gpu_count": 8,
                                                 "duration_hours": 20}]


def test_a_grant_lands_on_its_second_pool_when_the_first_is_full_and_that_pools_scheduler_reads_it(
    world, django_capture_on_commit_callbacks
):
    # Team B fills atlas/a100's standard capacity (46 of 64 GPUs) for the whole window; team A could run on either.
    full = file_either(world, team=world.team_b, pool_options=[], title="Pretraining", gpu_count=46,
                       min_gpu_count=46, duration_hours=96)
    either = file_either(world, pool_options=[{"pool": world.h100, "gpu_count": 8, "duration_hours": 24}],
                         title="Fine-tune", gpu_count=8, min_gpu_count=8, duration_hours=48)
    close(world)
    for member in (world.chair, world.reviewer, world.finance):
        score(member, full, 9, 9, 9)
        score(member, either, 5, 5, 5)
    decide(world, full)
    decide(world, either)

    preview = selectors.cycle_placement(cycle=world.cycle).by_request[either.pk]
    world.cycle = services.cycle_finalize(cycle=world.cycle, actor=world.chair)
    confirmation = selectors.publish_summary(cycle=world.cycle, now=timezone.now()).by_request[either.pk]
    with django_capture_on_commit_callbacks(execute=True):
        plan = services.cycle_publish(actor=world.chair, cycle=world.cycle)

    window = AllocationWindow.objects.select_related("pool__cluster").get(plan=plan, request_ref=either.pk)
    assert (window.pool, window.gpu_count, (window.end - window.start).total_seconds() / 3600) == (world.h100, 8, 24)
    said = "placed on orion/h100: atlas/a100 was full"
    assert said in plan.explanations.get(request_ref=either.pk).display_text()
    for shown in (preview, confirmation):  # the review's preview and the chair's confirmation before publishing
        assert (shown.pool_key, shown.other_pool, shown.text) == ("orion/h100", True, "8 H100, Mon 08:00–Tue 08:00, "
                                                                  "standard")
        assert said in shown.reason
    either.refresh_from_db()
    outcome = selectors.request_outcome_get(gpu_request=either, viewer=world.lead_a)
    assert said in outcome.reason
    assert outcome.status == selectors.PlacementStatus.AS_DECIDED  # 8 H100 for 24 h is all it asked there
    record = revision_latest(page=Page.objects.get(source_key=f"cycle:{world.cycle.week}"))
    assert ("placed: 8 H100, Mon 08:00–Tue 08:00, standard \\(192 GPU\\-hours\\) — "
            f"placed Mon 08:00–Tue 08:00 on 8 H100; {said}") in record.body  # the decision record

    api = APIClient()
    orion = api.get("/api/v1/windows/", {"cluster": "orion", "week": world.cycle.week},
                    **bearer(token_for(world.orion))).json()
    atlas = api.get("/api/v1/windows/", {"cluster": "atlas", "week": world.cycle.week},
                    **bearer(token_for(world.atlas))).json()
    assert [(w["request_id"], w["pool"], w["gpu_count"]) for w in orion["results"]] == [(either.pk, "h100", 8)]
    assert [w["request_id"] for w in atlas["results"]] == [full.pk]

    # The policy lab replays the week as it was placed: the same window, on the same pool.
    query = replay_query_parse([], current_weights=replay_parameters()[0], pools=replay_parameters()[1],
                               elastic_fields=replay_parameters()[2])
    inputs = replay_inputs_load(before=replay_before(week=query.before), weeks=query.weeks,
                                usage_weeks=query.overrides.trailing_weeks)
    runs = {run.request_id: run for week in replay(inputs=inputs, overrides=query.overrides).detail
            for run in week.baseline.requests}
    assert runs[either.pk].window == ("orion/h100", 8, instant_param(window.start), instant_param(window.end),
                                      window.tier)
    assert runs[either.pk].placed_gpu_hours == 8 * 24

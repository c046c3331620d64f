"""The one store of governed parameters: a value per key and week, one substantive change a week."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from core.errors import StateConflict
from governed.models import PolicyChange
from governed.selectors import policy_value, policy_values
from governed.services import policy_change_record
from tests.conftest import World


def test_version_1_holds_since_always_and_reads_the_settings(world: World, settings: object) -> None:
    assert policy_value(key="review.quorum", week="2001-W01") == 2
    assert policy_value(key="fairshare.trailing_weeks", week="2026-W50") == 8
    assert policy_values(week="2026-W50", prefix="rubric.") == {
        "rubric.business_impact": 40, "rubric.feasibility": 30, "rubric.urgency": 20, "rubric.fairness": 10}
    assert policy_value(key="pool.atlas/a100.burst_reserve_pct", week="2026-W50") == world.a100.burst_reserve_pct


def test_a_change_reaches_its_week_and_later_never_before(world: World) -> None:
    policy_change_record(actor=world.chair, changes={"review.quorum": 3}, effective_week="2026-W52",
                         reason="Three scores", source="command")
    assert policy_value(key="review.quorum", week="2026-W51") == 2
    assert policy_value(key="review.quorum", week="2026-W52") == 3
    assert policy_value(key="review.quorum", week="2027-W10") == 3
    assert policy_values(week="2026-W52")["review.quorum"] == 3


def test_a_second_change_in_a_week_is_refused_naming_the_next_free_week(world: World) -> None:
    policy_change_record(actor=world.chair, changes={"review.quorum": 3}, effective_week="2026-W52",
                         reason="Three scores", source="command")
    count = PolicyChange.objects.count()
    with pytest.raises(StateConflict, match=r"per week\. The next free week is 2026-W53"):
        policy_change_record(actor=world.chair, changes={"fairshare.trailing_weeks": 6}, effective_week="2026-W52",
                             reason="Shorter window", source="command")
    assert PolicyChange.objects.count() == count
    assert policy_value(key="fairshare.trailing_weeks", week="2026-W52") == 8


def test_an_exempt_change_states_why_and_is_kept(world: World) -> None:
    policy_change_record(actor=world.chair, changes={"review.quorum": 3}, effective_week="2026-W52",
                         reason="Three scores", source="command")
    change = policy_change_record(
        actor=world.chair, changes={"elastic.night_start": "23:00"}, effective_week="2026-W52",
        reason="Night starts at 23:00", exempt_reason="Typo in the adopted text: 23:00 was voted", source="command")
    assert change.exempt_reason.startswith("Typo")
    assert str(policy_value(key="elastic.night_start", week="2026-W52")) == "23:00:00"


@pytest.mark.parametrize(("changes", "message"), [
    ({"review.quorum": 0}, "out of range"),
    ({"review.quorum": "two"}, "is not a value"),
    ({"rubric.urgency": 25}, "must add up to 100; these add up to 105"),
    ({"pool.atlas/a100.standby_pct": 80}, "must stay below 100"),
    ({"review.colour": 1}, "is not a policy parameter"),
    ({"review.quorum": 2}, "Nothing changed"),
])
def test_bad_input_is_refused_and_changes_nothing(world: World, changes: dict[str, object], message: str) -> None:
    count = PolicyChange.objects.count()
    with pytest.raises(ValidationError, match=message):
        policy_change_record(actor=world.chair, changes=changes, effective_week="2026-W52", reason="Why",
                             source="command", baseline={"pool.atlas/a100.burst_reserve_pct": 20})
    assert PolicyChange.objects.count() == count


def test_each_change_writes_its_archive_page(world: World, django_capture_on_commit_callbacks: object) -> None:
    from reports.models import Page

    with django_capture_on_commit_callbacks(execute=True):  # type: ignore[operator]
        change = policy_change_record(actor=world.chair, changes={"review.quorum": 3}, effective_week="2026-W52",
                                      reason="Absences in January", source="command")
    page = Page.objects.get(source_key=f"policy-change:{change.number}")
    body = page.latest_revision.body  # type: ignore[union-attr]
    assert "Absences in January" in body and "2026-W52" in body
    assert "| Score quorum | 2 | 3 |" in body

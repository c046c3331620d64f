"""A deadlock's victim runs once more inside its service's transaction (core.locks.write_transaction), on PostgreSQL.

Two parties lock two teams' rows in opposite orders, each holding its first lock until the other holds its own
(a barrier), so PostgreSQL must end a real deadlock by rolling one back. Both still finish, each change counted
once: the victim ran twice and its first run left nothing.
"""

from __future__ import annotations

import threading

import pytest
from django.db import OperationalError, connection, transaction
from django.db.models import F

from allocations.models import Team
from core.locks import retryable, write_transaction
from tests.conftest import require
from tests.reports.conftest import on_postgresql

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def crossing_writers(first: int, second: int, *, wrap):
    """Two functions that lock `first` then `second`, and `second` then `first`, meeting at a barrier in between."""
    barrier = threading.Barrier(2, timeout=30)
    runs: list[str] = []

    def writer(name: str, one: int, two: int):
        @wrap
        def write() -> None:
            runs.append(name)
            Team.objects.select_for_update(no_key=True).get(pk=one)
            if runs.count(name) == 1:
                barrier.wait()  # both hold their first row: the second lock closes the circle
            Team.objects.select_for_update(no_key=True).get(pk=two)
            Team.objects.filter(pk__in=[one, two]).update(fair_share_weight=F("fair_share_weight") + 1)

        return write

    return writer("forward", first, second), writer("backward", second, first), runs


def run_together(*functions) -> list[BaseException]:
    errors: list[BaseException] = []

    def call(function) -> None:
        try:
            function()
        except BaseException as exc:  # reported to the test's thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=call, args=(function,)) for function in functions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return errors


def test_the_victim_of_a_deadlock_runs_again_and_both_changes_are_stored_once(world):
    require(on_postgresql(), "PostgreSQL (run with DATABASE_URL=postgres://…)")
    forward, backward, runs = crossing_writers(world.team_a.pk, world.team_b.pk, wrap=write_transaction)
    assert run_together(forward, backward) == []
    # The victim ran again; its second run may close the circle once more, against the other's first run, which then
    # runs again in its turn. Nobody runs a third time, and nobody fails.
    assert sorted(set(runs)) == ["backward", "forward"] and 3 <= len(runs) <= 4, runs
    assert dict(Team.objects.values_list("slug", "fair_share_weight")) == {"team-a": 4, "team-b": 3}


def test_without_it_the_same_circle_fails_one_of_them(world):
    require(on_postgresql(), "PostgreSQL (run with DATABASE_URL=postgres://…)")
    forward, backward, runs = crossing_writers(world.team_a.pk, world.team_b.pk, wrap=transaction.atomic)
    errors = run_together(forward, backward)
    assert len(errors) == 1 and isinstance(errors[0], OperationalError) and retryable(errors[0]), errors
    assert sorted(runs) == ["backward", "forward"]
    assert dict(Team.objects.values_list("slug", "fair_share_weight")) == {"team-a": 3, "team-b": 2}

"""Shared fixtures: named personas and a small world they live in."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import time_machine
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import transaction
from django.test import TestCase
from django.utils import timezone, translation

from allocations.models import Cluster, GpuPool, SchedulerKind, Team
from committee import weeks
from committee.models import CommitteeSeat, MembershipRole, ReviewCycle, SeatRole, TeamMembership
from committee.services import cycle_create
from core import breaker
from tests import fast_flush, live_server_sqlite, migrated_template
from tests.clock import FIXED_NOW, machine_now
from tests.elastic_policy import elastic_version_one_as_migrated

IN_CI = os.environ.get("CI", "").lower() == "true"


def require(condition: bool, what: str) -> None:
    """Skip when a local machine lacks a service or tool; in CI that is a failure, never a skip."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"{what} is missing in CI")
    pytest.skip(f"{what} is not available on this machine")


def pytest_configure(config: pytest.Config) -> None:
    """Pin the clock for the whole session too, so collection and wider-scoped fixtures never see the real day.

    xdist's --dist loadfile would hand the files out by their number of tests, most first (its --loadscope-reorder,
    on by default): the browser files, a test or two each, came last and the two walks ended the run alone. It takes
    them in collection order instead, the order pytest_collection_modifyitems below makes."""
    time_machine.travel(FIXED_NOW, tick=True).start()
    migrated_template.install()
    fast_flush.install()
    live_server_sqlite.install()
    if not hasattr(config, "workerinput"):  # the controller, or a run without xdist: it sees every report
        config.pluginmanager.register(FileSeconds(), "docket-file-seconds")
    if hasattr(config.option, "loadscopereorder"):  # set in the controller, which schedules; xdist may be absent
        config.option.loadscopereorder = False


# What a test takes, roughly, by its marker, where the last run's figures are not there: a browser test a few pages
# (several seconds), a test against slurmctld a few of its calls, a sign-on test a provider's round trips; any other
# test milliseconds to a second.
ESTIMATED_SECONDS = {"browser": 8.0, "slurm": 5.0, "sso": 2.0}
OTHER_TEST_SECONDS = 0.2
# Each file's seconds in the last run (setup, call and teardown of its tests), in pytest's cache (.pytest_cache).
FILE_SECONDS_KEY = "docket/file-seconds"
# The same, measured once and kept in the tree, for a run without pytest's cache (CI, a new clone): without it the
# walks (100 s each, one test) were guessed at 8 s and could start last. `make file-seconds` writes it again from the
# cache of a `make test` run.
KEPT_FILE_SECONDS = Path(__file__).with_name("file-seconds.json")


def estimated_seconds(item: pytest.Item) -> float:
    marked = [seconds for name, seconds in ESTIMATED_SECONDS.items() if item.get_closest_marker(name)]
    return max(marked, default=OTHER_TEST_SECONDS)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest files first, each file's tests in their order: xdist (--dist loadfile) hands files out in this
    order, so the long ones start at once and the many short ones fill the gaps at the end, and both workers finish
    together instead of one long file keeping a worker busy while the other has nothing left.

    A file's length is what it took in the last run, when pytest's cache has it (`make test` keeps it; CI runs
    without it), else what it took when tests/file-seconds.json was written, else the estimate of its tests'
    markers."""
    cache = getattr(config, "cache", None)
    measured: dict[str, float] = json.loads(KEPT_FILE_SECONDS.read_text()) if KEPT_FILE_SECONDS.exists() else {}
    if cache is not None:
        measured.update(cache.get(FILE_SECONDS_KEY, {}))
    estimated: dict[str, float] = {}
    for item in items:
        name = item.nodeid.split("::")[0]
        estimated[name] = estimated.get(name, 0.0) + estimated_seconds(item)
    seconds = {name: measured.get(name, guess) for name, guess in estimated.items()}
    # Stable, and by name where two files tie: each file's tests stay together, in pytest-django's order.
    items.sort(key=lambda item: (-seconds[item.nodeid.split("::")[0]], item.nodeid.split("::")[0]))


class FileSeconds:
    """Adds up each file's seconds as the reports come in (in xdist's controller, from every worker) and keeps them
    in pytest's cache at the end, for the next run's order."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        name = report.nodeid.split("::")[0]
        self.seconds[name] = self.seconds.get(name, 0.0) + report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        cache = getattr(session.config, "cache", None)
        if cache is not None and self.seconds:
            kept = cache.get(FILE_SECONDS_KEY, {})
            kept.update({name: round(seconds, 2) for name, seconds in self.seconds.items()})
            cache.set(FILE_SECONDS_KEY, kept)


@pytest.fixture(autouse=True)
def language_of_the_settings() -> Iterator[None]:
    """Every test starts in settings.LANGUAGE_CODE: a page asked for in Chinese leaves its language active in the
    test's thread (LocaleMiddleware activates it and nothing deactivates it), which the next test would inherit."""
    translation.deactivate()
    yield
    translation.deactivate()


@pytest.fixture(autouse=True)
def breakers_closed() -> None:
    """Every test starts with the cache and the broker called (core/breaker.py): a test with a hung Redis opens one."""
    breaker.CACHE.reset()
    breaker.BROKER.reset()


@pytest.fixture(autouse=True)
def celery_reads_the_settings() -> Iterator[None]:
    """Celery reads Django's settings on each use (config/celery.py), so a test changes its configuration through the
    `settings` fixture. `app.conf.name = …` would pin an override over the settings for every later test in the
    process (three outbox tests once went eager after a test that set and "restored" it): a test leaving one fails."""
    from config.celery import app

    app.conf.get("task_always_eager")  # loads the configuration: from then on `changes` holds what was set on it
    before = dict(app.conf.changes)
    yield
    left = sorted(name for name, value in app.conf.changes.items() if name not in before or before[name] != value)
    assert not left, f"the test left Celery overrides {left}: change CELERY_* through the `settings` fixture"


@pytest.fixture(autouse=True)
def process_cache_empty() -> None:
    """Every test starts with an empty per-process cache (locmem, the tests' default) and no ranking kept by the
    process: a test's database is rolled back and its ids come again, so a week's ranking kept by an earlier test
    (committee/selectors/ranking.py) would be read for another week. A shared cache (CACHE_URL) is left alone:
    other workers count rate limits in it."""
    empty_process_cache()


def empty_process_cache() -> None:
    """`process_cache_empty`'s work, for a test that runs several cases in savepoints of its own."""
    from django.core.cache import caches
    from django.core.cache.backends.locmem import LocMemCache

    from committee.selectors.ranking import rankings_kept_forget

    if isinstance(caches["default"], LocMemCache):
        caches["default"].clear()
    rankings_kept_forget()


@pytest.fixture(autouse=True)
def clock(request: pytest.FixtureRequest) -> Iterator[time_machine.Traveller]:
    """Every test starts at FIXED_NOW (tests/clock.py) and ticks from there; `clock.move_to(t)` jumps.

    Tests against a real slurmctld (marked `slurm`) run on the machine's clock, which the controller keeps.
    """
    start = machine_now() if request.node.get_closest_marker("slurm") else FIXED_NOW
    with time_machine.travel(start, tick=True) as traveller:
        yield traveller


@pytest.fixture
def pinned(clock: time_machine.Traveller) -> time_machine.Traveller:
    """The clock stopped at FIXED_NOW, for tests that compare exact instants."""
    clock.move_to(FIXED_NOW, tick=False)
    return clock


@pytest.fixture(scope="class")
def seeded_demo(django_db_setup: Any, django_db_blocker: Any) -> Iterator[SimpleNamespace]:
    """One seed_demo (a few seconds) for a class of tests that read what it made: run at FIXED_NOW in a transaction that
    outlives those tests (each test's own writes go to a savepoint and are rolled back) and is rolled back after
    them. What it printed is kept in `out`."""
    printed = io.StringIO()
    with django_db_blocker.unblock(), transaction.atomic():
        elastic_version_one_as_migrated()  # as a migrated database holds it, whatever flushed this worker's before
        # What the demo's services ask for after their commits (the weeks' decision records, through the outbox) runs
        # as it does in a real `seed_demo`, whose transactions commit.
        with time_machine.travel(FIXED_NOW, tick=True), TestCase.captureOnCommitCallbacks(execute=True):
            call_command("seed_demo", "--i-know-this-is-not-production", stdout=printed)
        yield SimpleNamespace(out=printed.getvalue())
        transaction.set_rollback(True)


@pytest.fixture
def scheduler(pinned: time_machine.Traveller, world: World) -> Any:
    """The REST API as atlas's scheduler sees it: a client with a token bound to cluster atlas."""
    from rest_framework.test import APIClient

    from tests.allocations.plans import bearer, token_for

    api = APIClient()
    api.credentials(**bearer(token_for(world.atlas)))
    return api


def make_user(username: str, **extra: Any) -> User:
    first = username.replace("-", " ").title()
    return get_user_model().objects.create_user(
        username=username, password="pw", first_name=first, email=f"{username}@example.com", **extra
    )


@dataclass
class World:
    """The tests' small world: two clusters with a pool each, teams A and B, a committee, next week's cycle.

    Personas: chair, reviewer (product lead), tech (tech lead, also a member of team B), finance,
    lead_a (lead of team A), member_a, member_b (member of team B), outsider (no team).
    """

    atlas: Cluster
    orion: Cluster
    a100: GpuPool
    h100: GpuPool
    team_a: Team
    team_b: Team
    cycle: ReviewCycle
    chair: User
    reviewer: User
    tech: User
    finance: User
    lead_a: User
    member_a: User
    member_b: User
    outsider: User


def committed(call: Any, /, *args: Any, **kwargs: Any) -> Any:
    """Call a service as a request does: its transaction commits, then what it asked for after commit runs (the
    outbox's tasks in-process: the week's decision record, the notifications). A test's own transaction never
    commits, so without this none of that runs. Returns what `call(*args, **kwargs)` returns."""
    with TestCase.captureOnCommitCallbacks(execute=True):
        return call(*args, **kwargs)


@pytest.fixture
def world(db: object) -> World:
    """Two clusters with a pool each, teams A and B, a committee, and next week's cycle open for intake.

    Personas: chair, reviewer (product lead), tech (tech lead, also a member of team B),
    finance, lead_a (lead of team A), member_a, member_b (member of team B), outsider (no team).
    """
    return build_world()


def build_world() -> World:
    """The `world` fixture's rows, for fixtures of a wider scope that build them once (database access is theirs)."""
    now = timezone.now()
    atlas = Cluster.objects.create(slug="atlas", name="Atlas", scheduler_kind=SchedulerKind.SLURM)
    orion = Cluster.objects.create(slug="orion", name="Orion", scheduler_kind=SchedulerKind.KUEUE)
    a100 = GpuPool.objects.create(
        cluster=atlas, slug="a100", gpu_model="A100", gpu_count=64, gpus_per_node=8, scheduler_label="a100"
    )
    h100 = GpuPool.objects.create(
        cluster=orion, slug="h100", gpu_model="H100", gpu_count=32, gpus_per_node=8, scheduler_label="h100"
    )
    team_a = Team.objects.create(name="Team A", slug="team-a", fair_share_weight=2)
    team_b = Team.objects.create(name="Team B", slug="team-b", fair_share_weight=1)
    people = {name: make_user(name) for name in
              ("chair", "reviewer", "tech", "finance", "lead_a", "member_a", "member_b", "outsider")}
    since = timezone.localdate() - timedelta(days=30)
    for name, seat in (("chair", SeatRole.CHAIR), ("reviewer", SeatRole.PRODUCT_LEAD),
                       ("tech", SeatRole.TECH_LEAD), ("finance", SeatRole.FINANCE)):
        CommitteeSeat.objects.create(user=people[name], role=seat, active_from=since)
    TeamMembership.objects.create(user=people["lead_a"], team=team_a, role=MembershipRole.LEAD)
    TeamMembership.objects.create(user=people["member_a"], team=team_a)
    TeamMembership.objects.create(user=people["member_b"], team=team_b)
    TeamMembership.objects.create(user=people["tech"], team=team_b)
    cycle = cycle_create(week=weeks.next_week_label(now))
    if cycle.intake_closes_at <= now:
        cycle.intake_closes_at = now + timedelta(days=1)
        cycle.review_at = now + timedelta(days=2)
        cycle.save()
    return World(
        atlas=atlas, orion=orion, a100=a100, h100=h100, team_a=team_a, team_b=team_b, cycle=cycle, **people
    )


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Keep each phase's report on the test item, so fixtures can tell whether the test failed."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report

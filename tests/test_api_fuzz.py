"""API fuzzing: schemathesis generates requests from /api/v1/schema/ and checks every answer.

Every operation of the schema, as each kind of API caller (a committee member's personal
token, a team member's personal token, a scheduler token), with every built-in check of
schemathesis: no 5xx, status codes, content types, headers and bodies as the schema says,
invalid data rejected, valid data accepted, authentication not ignored. Hypothesis runs
derandomized (a fixed seed: the same examples on every run) with a bounded number per operation.
Calls go straight to the WSGI application in-process, against the populated Docket of
tests/security_world.py (rolled back after the module).
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import CHECKS, load_all_checks

from core.datetimes import OFFSET_MESSAGE, RANGE_MESSAGE
from tests.security_world import estate as build_estate

MAX_EXAMPLES = 25

# Loaded once at collection, through the app's own URL (the schema view touches no database).
schema = schemathesis.openapi.from_wsgi("/api/v1/schema/", get_wsgi_application())


@pytest.fixture(scope="module")
def estate(django_db_setup: Any, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    # Calls go through Django's real WSGI handler, which closes the database connection after each
    # request (CONN_MAX_AGE=0); that would end the estate's transaction. Django's test client keeps
    # the connection the same way.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield from build_estate(django_db_blocker, tmp_path_factory.mktemp("pdf"))
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


# Rules that OpenAPI cannot state (a relation between two fields, or to rows in the database), by
# operation and by the field the API's 400 names. Refusing schema-valid data for one of these is the
# API doing what docs/scheduler-api.md says; refusing it for anything else still fails the test.
RULES_BEYOND_THE_SCHEMA: dict[tuple[str, str], dict[str, str]] = {
    ("GET", "/api/v1/windows/"): {
        "non_field_errors": "`after` and `before` exclude each other",
        "as_of": "a change sequence the server still holds",
    },
    ("POST", "/api/v1/usage/"): {
        "period_start": "within the retention horizon (DOCKET_USAGE_MAX_AGE_DAYS)",
        "period_end": "after period_start, and not in the future",
        "team": "an existing team with an account on the cluster or a window on the pool",
        "pool": "a pool of the token's cluster",
        "window": "a window of the token's cluster, that team and pool, overlapping the period",
        "gpu_hours_used": "what the pool holds over the period, with the pool's other reports",
    },
    ("POST", "/api/v1/requests/{id}/corrections/"): {
        "reason": "not only spaces",
        "rationale": "not only spaces",
        "outcome": "a change of the decision (docs/corrections.md)",
        "granted_gpu_count": "a partial grant's count, from the request's minimum to one less than asked",
    },
    ("POST", "/api/v1/requests/{id}/appeals/"): {
        "statement": "not only spaces",
    },
    ("POST", "/api/v1/appeals/{id}/decision/"): {
        "reason": "not only spaces",
        "rationale": "required when amending",
        "outcome": "an amendment changes the decision",
        "granted_gpu_count": "a partial grant's count, from the request's minimum to one less than asked",
    },
    ("POST", "/api/v1/requests/{id}/comments/"): {
        "body": "not only spaces",
    },
    ("POST", "/api/v1/requests/{id}/questions/"): {
        "body": "not only spaces",
    },
    ("POST", "/api/v1/questions/{id}/answer/"): {
        "answer": "not only spaces",
    },
    ("POST", "/api/v1/elastic/actions/"): {
        "pool": "a pool of the token's cluster",
        "window": "a window on that pool",
        "team": "an existing team, the window's",
        "acted_at": "not in the future",
        "policy_version": "a version of the rules that exists",
        "idempotency_key": "not only spaces",
        "measured_by": "not only spaces",
        "applied": "not only spaces",
    },
    ("POST", "/api/v1/webhooks/"): {
        "team": "an existing team's slug, and one of a team or a cluster (docs/events.md)",
        "cluster": "an existing cluster's slug",
        "url": "an http(s) address of a public host",
    },
    ("POST", "/api/v1/requests/{id}/release/"): {
        "effective_from": "a whole hour, not in the past, before the window ends (docs/release.md)",
        "gpu_count": "at most what the window holds",
    },
    ("POST", "/api/v1/requests/{id}/extension/"): {
        "hours": "at most what the week has left after the window (docs/release.md)",
        "justification": "not only spaces",
    },
    ("POST", "/api/v1/windows/sync-status/"): {
        "statuses.<n>.window": "a window of the token's cluster",
        "statuses": "each window once",
    },
}


# On every operation: a week label the schema's pattern (YYYY-Www) admits may still name no week.
WEEK_RULE = {"week": "an ISO week that exists: 2026-W53 does, 2025-W53 and 0000-W00 do not"}


@schema.hook
def filter_failure(context: Any, failure: Any, case: Any, response: Any) -> bool:
    """Keep every failure but a schema-valid request refused (400) for a documented rule the schema cannot state."""
    rules = {**WEEK_RULE, **RULES_BEYOND_THE_SCHEMA.get((case.operation.method.upper(), case.operation.path), {})}
    if not rules or type(failure).__name__ != "RejectedPositiveData" or response.status_code != 400:
        return True
    body = json.loads(response.content or b"{}")
    if body and all(_only_storage_limits(messages) for messages in body.values()):
        return False
    # A field refused only for a storage limit is excused beside a documented rule's field too (both at once:
    # `after` with `before`, and an `active_at` offset beyond ±15:59).
    fields = {re.sub(r"\.\d+\.", ".<n>.", key) for key, messages in body.items() if not _only_storage_limits(messages)}
    return not fields or not fields <= set(rules)


def _only_storage_limits(messages: Any) -> bool:
    """An RFC 3339 date-time the schema admits but PostgreSQL cannot store (docs/scheduler-api.md states the limits):
    an offset beyond ±15:59, or a year outside 1–9999 once in UTC."""
    limits = (str(OFFSET_MESSAGE), str(RANGE_MESSAGE))
    return isinstance(messages, list) and bool(messages) and all(message in limits for message in messages)


def authorization(estate: SimpleNamespace, role: str) -> str:
    scheme = "Bearer" if role.startswith("sched_") else "Token"
    return f"{scheme} {estate.tokens[role]}"


def all_checks() -> list[Any]:
    load_all_checks()
    return CHECKS.get_all()


FUZZ_SETTINGS = settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def call(case: Any, estate: SimpleNamespace, role: str) -> None:
    assert estate  # (db access comes with the estate fixture)
    # Uncompressed: schemathesis's WSGI transport hands the body to its checks without undoing gzip, which then
    # read gzip's bytes as JSON (ST110). Compression has its own tests (tests/allocations/test_windows_api.py,
    # tests/test_static_files.py).
    headers = {"Authorization": authorization(estate, role), "Accept-Encoding": "identity"}
    case.call_and_validate(headers=headers, checks=all_checks())


@schema.parametrize()
@FUZZ_SETTINGS
def test_api_as_a_committee_member(case: Any, estate: SimpleNamespace, db: Any) -> None:
    call(case, estate, "committee")


@schema.parametrize()
@FUZZ_SETTINGS
def test_api_as_a_team_member(case: Any, estate: SimpleNamespace, db: Any) -> None:
    call(case, estate, "team_a")


@schema.parametrize()
@FUZZ_SETTINGS
def test_api_as_a_scheduler(case: Any, estate: SimpleNamespace, db: Any) -> None:
    call(case, estate, "sched_a")

"""No page answers 5xx, whatever its query parameters or free path segments hold.

Every page of the permission matrix (tests/test_permission_matrix.py: every URL pattern but the API,
which tests/test_api_fuzz.py fuzzes from its schema) is asked, as each signed-in role in turn, with
odd values, a few per page in turn: a superscript and full-width digits, quarters of the years 0, 1,
2, 9998 and 9999, a trailing newline, a NUL byte, huge numbers, a very long text, nothing. The
parameters are every name the page's view module reads from GET or POST (found in its source) and
the names pages commonly read; each value is sent in all of them at once, then each of the module's
own names alone (so that a clean 404 on one cannot hide another's 500). Free path segments
(`<str:quarter>`, `<str:month>`) get the same values. POSTs go to the pages that take them.

About 650 requests; the corpus turns over from page to page, so every value meets about a dozen
pages and half the values each free segment. The estate is the permission matrix's, built once.
"""

from __future__ import annotations

import inspect
import re
from functools import partial
from itertools import cycle
from types import SimpleNamespace
from typing import Any
from urllib.parse import quote

import pytest
from django.core.cache import cache

from tests.security_world import client_for
from tests.security_world import estate as build_estate
from tests.test_permission_matrix import TABLE, Row, url_routes

ODD = [
    "²", "１２", "٣", "0000-Q1", "0001-Q1", "0002-Q1", "9998-Q4", "9999-Q4", "2026-Q4\n", "1\n", " 1", "-1", "0", "",
    "\x00", "9" * 30, "1e999", "nan", "2026-W99", "0000-W01", "9999-12", "x" * 5000, "1,2", "[]",
]
SHARP = ["²", "１２", "9" * 30, "2026-Q4\n", "\x00", "0000-Q1"]  # each of a view's own names alone
COMMON = ["page", "week", "team", "pool", "request", "baseline", "copy", "id", "up_to", "weeks", "month",
          "quarter", "next", "q", "cluster", "mine", "sort", "status", "number", "ranking"]
READS = re.compile(r"(?:GET|POST|params|query|data)\.get(?:list)?\(\s*[\"']([A-Za-z0-9_.-]+)[\"']")
FREE_SEGMENT = re.compile(r"<(?:str|path):(\w+)>")
ROLES = ("team_a", "team_b", "committee", "chair")
PER_PAGE = 2


def _names_read(callback: Any) -> list[str]:
    module = inspect.getmodule(getattr(callback, "view_class", None) or getattr(callback, "cls", None) or callback)
    source = inspect.getsource(module) if module is not None else ""
    return sorted(set(READS.findall(source)) - {"DELETE"})


def _pages() -> list[tuple[Row, Any]]:
    callbacks = dict(url_routes())
    return [(row, callbacks[row.route]) for row in TABLE if not row.api and row.route in callbacks]


@pytest.fixture(scope="module")
def estate(django_db_setup: Any, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    yield from build_estate(django_db_blocker, tmp_path_factory.mktemp("pdf"))


def _value_of(values: dict[str, Any], match: re.Match[str]) -> str:
    return str(values[match.group(1)])


def _ask(clients: dict[str, Any], roles: Any, method: str, path: str, params: dict[str, str],
         failures: list[str]) -> None:
    role = next(roles)
    client = clients[role]
    cache.clear()  # rate limits count in the cache
    response = client.get(path, params) if method == "GET" else client.post(path, params)
    if response.status_code >= 500:
        failures.append(f"{role} {method} {path} {params!r:.200}: {response.status_code}")


def test_no_page_answers_5xx_to_odd_parameters(estate: SimpleNamespace, db: Any) -> None:
    clients = {role: client_for(estate, role, api=False) for role in ROLES}
    for client in clients.values():
        client.raise_request_exception = False  # a 500 is collected with the others, not raised
    roles, odd, sharp = cycle(ROLES), cycle(ODD), cycle(SHARP)
    failures: list[str] = []
    asked: set[tuple[str, str]] = set()
    for row, callback in _pages():
        own = _names_read(callback)
        names = sorted(set(own) | set(COMMON))
        for method in row.methods:
            if method not in {"GET", "POST"} or row.route.startswith(("accounts/", "i18n/")):
                continue
            if (row.route, method) in asked:  # a route with several rows (other objects): once is enough
                continue
            asked.add((row.route, method))
            free = FREE_SEGMENT.findall(row.route)
            if not free:
                path = row.path(estate)
                # Every name at once, with a few values a page (the corpus turns over from page to page).
                for value in [next(odd) for _ in range(PER_PAGE)]:
                    _ask(clients, roles, method, path, dict.fromkeys(names, value), failures)
                # Each of the view's own names alone, so that one name's clean 404 hides no other's 500.
                for name in own:
                    _ask(clients, roles, method, path, {name: next(sharp)}, failures)
            for segment in free:
                for value in [next(odd) for _ in range(len(ODD) // 2)]:
                    if not value:
                        continue
                    values = {**row.kwargs(estate), segment: quote(value, safe="")}
                    bent = "/" + re.sub(r"<(?:\w+:)?(\w+)>", partial(_value_of, values), row.route)
                    _ask(clients, roles, method, bent, dict.fromkeys(own, value), failures)
    assert len(asked) > 100
    assert not failures, f"{len(failures)} answers were 5xx:\n" + "\n".join(failures[:40])


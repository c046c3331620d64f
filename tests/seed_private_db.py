"""Migrate the database in DATABASE_URL and put the tests' world in it (tests that run Docket on a private cluster).

    DJANGO_SETTINGS_MODULE=tests.settings DATABASE_URL=postgres://…/docket python -m tests.seed_private_db

Prints what the test needs to know as one JSON line. Only for throwaway databases that a test
created itself (tests/processes.py, PrivatePostgres).
"""

from __future__ import annotations

import json

import django


def main() -> None:
    django.setup()
    from django.core.management import call_command

    from allocations.services import scheduler_client_create
    from reports.services import page_create
    from tests.conftest import build_world

    call_command("migrate", verbosity=0)
    world = build_world()
    page = page_create(actor=world.chair, slug="charter", title="Charter", body="# Charter\n\nWe allocate by rubric.",
                       summary="First version")
    token = scheduler_client_create(cluster=world.atlas, name="fault-test").token
    print(json.dumps({"a100": world.a100.pk, "team_a": world.team_a.pk, "page": page.slug, "token": token,
                      "cycle_starts_at": world.cycle.starts_at.isoformat()}))


if __name__ == "__main__":
    main()

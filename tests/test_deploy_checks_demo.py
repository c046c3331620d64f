"""check --deploy fails while demo accounts or demo tokens exist, or the cache is each worker's own.

The first tests run `manage.py` in a subprocess with production settings (tests/test_deploy_checks.py)
on a database of their own; the last ones call the checks in-process on the test database.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User

from allocations import services as allocation_services
from allocations.models import Cluster, SchedulerClient
from committee.checks import DEMO_PASSWORD_CHECKS, check_no_demo_data, check_shared_cache, check_trusted_proxies
from committee.demo import DEMO_PASSWORD, DEMO_SCHEDULER_TOKENS
from tests import migrated_template
from tests.test_deploy_checks import manage

SEED_A_LITTLE_DEMO = f"""
from django.contrib.auth.models import User
from allocations.models import Cluster
from allocations.services import scheduler_client_create
User.objects.create_user("chair", "chair@docket.example", {DEMO_PASSWORD!r})
User.objects.create_user("alice", "alice@corp.example", "a-real-password-of-alice")
cluster = Cluster.objects.create(slug="atlas", name="Atlas")
scheduler_client_create(cluster=cluster, name="demo-sync", token={DEMO_SCHEDULER_TOKENS["atlas"]!r})
"""

# Then, in the same process (each `manage.py` start is seconds): check --deploy, the demo's password and token
# replaced, check --deploy again at the strictest level. Prints each check's exit and words as JSON.
CHECK_CLEAN_UP_CHECK = """
import io, json
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from allocations.models import SchedulerClient
from allocations.services import scheduler_client_rotate

def check(**options):
    said = io.StringIO()
    try:
        call_command("check", deploy=True, stdout=said, stderr=said, **options)
    except SystemCheckError as failed:
        return [1, said.getvalue() + str(failed)]
    return [0, said.getvalue()]

before = check()
chair = User.objects.get(username="chair")
chair.set_password("a-new-password-for-the-chair")
chair.save()
scheduler_client_rotate(client=SchedulerClient.objects.get(name="demo-sync"))
print(json.dumps([before, check(fail_level="DEBUG")]))
"""


def test_demo_accounts_and_tokens_fail_the_deploy_check_until_replaced(tmp_path: Path, django_db_setup: Any) -> None:
    database = f"sqlite:///{tmp_path}/seeded.sqlite3"
    # The migrations as the suite's test databases have them (tests/migrated_template.py), else run here.
    if not migrated_template.copy_into(tmp_path / "seeded.sqlite3"):
        assert manage("migrate", "--no-input", "-v", "0", DATABASE_URL=database).returncode == 0
    seeded = manage("shell", "--no-imports", "-v", "0", "-c", SEED_A_LITTLE_DEMO + CHECK_CLEAN_UP_CHECK,
                    DATABASE_URL=database)
    assert seeded.returncode == 0, seeded.stderr
    (failed, output), (passed, fixed) = json.loads(seeded.stdout.strip().splitlines()[-1])
    assert failed == 1, output
    assert "(docket.E001) Demo accounts with the published demo password exist: chair." in output
    assert "(docket.E002) Scheduler clients use the demo's publicly known tokens: demo-sync (atlas)." in output
    assert "alice" not in output
    assert passed == 0, fixed


def test_a_per_process_cache_fails_the_deploy_check() -> None:
    result = manage("check", "--deploy", CACHE_URL="")
    output = result.stderr + result.stdout
    assert result.returncode != 0
    assert "(docket.E003) The cache is LocMemCache" in output and "Set CACHE_URL" in output


def test_an_unmigrated_database_has_nothing_to_report(tmp_path: Path) -> None:
    result = manage("check", "--deploy", "--fail-level", "DEBUG", DATABASE_URL=f"sqlite:///{tmp_path}/empty.sqlite3")
    assert result.returncode == 0, result.stderr + result.stdout


# --- in-process -------------------------------------------------------------------------------


def ids(problems: list) -> list[str]:
    return [problem.id for problem in problems]


def test_checking_changes_no_password_hash(db) -> None:
    user = User.objects.create_user("chair", "chair@docket.example", DEMO_PASSWORD)
    before = User.objects.get(pk=user.pk).password
    assert ids(check_no_demo_data()) == ["docket.E001"]
    assert User.objects.get(pk=user.pk).password == before


def test_only_a_bounded_number_of_passwords_is_checked_demo_addresses_first(db) -> None:
    for number in range(DEMO_PASSWORD_CHECKS + 3):
        User.objects.create_user(f"person{number}", f"person{number}@corp.example", secrets.token_urlsafe(12))
    User.objects.create_user("renamed", "renamed@corp.example", DEMO_PASSWORD)  # past the bound, not a demo address
    assert check_no_demo_data() == []
    User.objects.create_user("chair", "chair@docket.example", DEMO_PASSWORD)  # a demo address: checked first
    assert ids(check_no_demo_data()) == ["docket.E001"]


def test_inactive_demo_accounts_and_clients_pass(db) -> None:
    User.objects.create_user("chair", "chair@docket.example", DEMO_PASSWORD, is_active=False)
    cluster = Cluster.objects.create(slug="atlas", name="Atlas")
    allocation_services.scheduler_client_create(cluster=cluster, name="demo-sync", token=DEMO_SCHEDULER_TOKENS["atlas"])
    assert ids(check_no_demo_data()) == ["docket.E002"]
    SchedulerClient.objects.update(is_active=False)
    assert check_no_demo_data() == []


def test_a_demo_token_still_in_its_overlap_after_rotation_fails(db) -> None:
    from datetime import timedelta

    cluster = Cluster.objects.create(slug="atlas", name="Atlas")
    issued = allocation_services.scheduler_client_create(cluster=cluster, name="demo-sync",
                                                          token=DEMO_SCHEDULER_TOKENS["atlas"])
    allocation_services.scheduler_client_rotate(client=issued.client, overlap=timedelta(hours=24))
    assert ids(check_no_demo_data()) == ["docket.E002"]


def test_the_cache_check_is_quiet_with_debug_or_a_shared_cache(settings) -> None:
    settings.DEBUG = False
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    assert ids(check_shared_cache()) == ["docket.E003"]
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": "redis://127.0.0.1:6379/0"}}
    assert check_shared_cache() == []
    settings.DEBUG = True
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    assert check_shared_cache() == []


def test_a_proxy_count_without_the_proxies_networks_warns(settings) -> None:
    settings.DOCKET_TRUSTED_PROXY_COUNT, settings.DOCKET_TRUSTED_PROXIES = 1, []
    [warning] = check_trusted_proxies()
    assert warning.id == "docket.W002" and "DOCKET_TRUSTED_PROXIES names no network" in warning.msg
    settings.DOCKET_TRUSTED_PROXIES = ["127.0.0.1/32"]
    assert check_trusted_proxies() == []
    settings.DOCKET_TRUSTED_PROXY_COUNT, settings.DOCKET_TRUSTED_PROXIES = 0, []
    assert check_trusted_proxies() == []

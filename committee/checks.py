"""Deploy checks (`manage.py check --deploy`): what must not be in a production Docket.

- demo accounts whose password is the demo's published one (committee.demo.DEMO_PASSWORD);
- the demo's scheduler tokens, printed in the docs (committee.demo.DEMO_SCHEDULER_TOKENS);
- a per-process cache with DEBUG off: the API's rate limits would count per worker (CACHE_URL).

Each is an Error, so `check --deploy` exits non-zero until it is fixed. A Warning:

- a proxy count without the proxies' networks (DOCKET_TRUSTED_PROXY_COUNT without DOCKET_TRUSTED_PROXIES):
  X-Forwarded-For is then believed from nobody, so behind a proxy every client looks like the proxy.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import UNUSABLE_PASSWORD_PREFIX, check_password
from django.core.checks import Error, Tags, Warning, register
from django.db import DatabaseError, connection
from django.db.models import Case, IntegerField, Q, Value, When
from django.utils import timezone

from allocations.models import SchedulerClient
from committee.demo import DEMO_PASSWORD, DEMO_SCHEDULER_TOKENS
from core.tokens import token_hash

# Checking a password costs what signing in costs (PBKDF2, about 0.3 s each): only the likeliest few.
DEMO_PASSWORD_CHECKS = 5
DEMO_EMAIL_DOMAIN = "@docket.example"  # every demo account's address (committee/demo/people.py)
PER_PROCESS_CACHES = ("django.core.cache.backends.locmem.LocMemCache", "django.core.cache.backends.dummy.DummyCache")


def _tables_exist(*names: str) -> bool:
    return set(names) <= set(connection.introspection.table_names())


def demo_accounts_with_the_demo_password() -> list[str]:
    """Usernames (among at most DEMO_PASSWORD_CHECKS) whose password is the demo's; nothing is written."""
    user_model = get_user_model()
    candidates = (
        user_model.objects.filter(is_active=True)
        .exclude(password__startswith=UNUSABLE_PASSWORD_PREFIX)
        .annotate(demo=Case(When(email__endswith=DEMO_EMAIL_DOMAIN, then=Value(0)), default=Value(1),
                            output_field=IntegerField()))
        .order_by("demo", "pk")
        .values_list(user_model.USERNAME_FIELD, "password")[:DEMO_PASSWORD_CHECKS]
    )
    return [username for username, encoded in candidates if check_password(DEMO_PASSWORD, encoded)]


def demo_scheduler_clients() -> list[str]:
    hashes = [token_hash(token) for token in DEMO_SCHEDULER_TOKENS.values()]
    found = SchedulerClient.objects.filter(is_active=True).filter(
        Q(token_hash__in=hashes) | Q(previous_token_hash__in=hashes, previous_token_expires_at__gt=timezone.now())
    ).select_related("cluster")
    return [str(client) for client in found]


@register(Tags.security, deploy=True)
def check_no_demo_data(app_configs: Any = None, **kwargs: Any) -> list[Error | Warning]:
    try:
        if not _tables_exist(get_user_model()._meta.db_table, SchedulerClient._meta.db_table):
            return []  # not migrated yet: nothing seeded either
        users = demo_accounts_with_the_demo_password()
        clients = demo_scheduler_clients()
    except DatabaseError as exc:
        return [Warning(f"Could not look for demo accounts and tokens: the database answered {exc}.",
                        id="docket.W001")]
    problems: list[Error | Warning] = []
    if users:
        problems.append(Error(
            f"Demo accounts with the published demo password exist: {', '.join(users)}.",
            hint="This database was seeded with `seed_demo`. Start from an empty database, or give these "
                 "accounts new passwords (manage.py changepassword) or deactivate them.",
            id="docket.E001",
        ))
    if clients:
        problems.append(Error(
            f"Scheduler clients use the demo's publicly known tokens: {', '.join(clients)}.",
            hint="Issue new tokens (manage.py scheduler_token --cluster SLUG --name NAME --rotate) or "
                 "deactivate these clients in the admin.",
            id="docket.E002",
        ))
    return problems


@register(Tags.caches, deploy=True)
def check_shared_cache(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    backend = str(settings.CACHES["default"]["BACKEND"])
    if settings.DEBUG or backend not in PER_PROCESS_CACHES:
        return []
    return [Error(
        f"The cache is {backend.rsplit('.', 1)[-1]}, which each worker process keeps for itself: the API's "
        "rate limits would count per worker, not per token.",
        hint="Set CACHE_URL to a Redis shared by all workers (redis://host:6379/0).",
        id="docket.E003",
    )]


@register(Tags.security, deploy=True)
def check_trusted_proxies(app_configs: Any = None, **kwargs: Any) -> list[Warning]:
    if not settings.DOCKET_TRUSTED_PROXY_COUNT or settings.DOCKET_TRUSTED_PROXIES:
        return []
    return [Warning(
        f"DOCKET_TRUSTED_PROXY_COUNT is {settings.DOCKET_TRUSTED_PROXY_COUNT} but DOCKET_TRUSTED_PROXIES names no "
        "network: X-Forwarded-For is believed from no peer (but one on gunicorn's Unix socket), so behind a proxy "
        "every client has the proxy's address (and shares its sign-in lockouts).",
        hint="Set DOCKET_TRUSTED_PROXIES to the proxies' addresses (e.g. 127.0.0.1/32 for nginx on the same host), "
             "or DOCKET_TRUSTED_PROXY_COUNT=0 if nothing stands in front of gunicorn (on a Unix socket, "
             "127.0.0.1/32 does: the socket's peer is trusted anyway).",
        id="docket.W002",
    )]

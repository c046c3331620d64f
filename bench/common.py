"""What the benchmarks share: a production-like environment and a fresh PostgreSQL database."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH_PG = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")


def production_env(*, db_name: str, settings_module: str = "config.settings") -> dict[str, str]:
    """The environment of a gunicorn under load: production settings (DEBUG off, persistent
    connections, quiet logs) on `db_name`, without the HTTPS-only switches a loopback run can't meet,
    API rate limits out of reach, and no broker (tasks run in-process)."""
    env = {
        **os.environ,
        "DATABASE_URL": f"{BENCH_PG}/{db_name}",
        "DJANGO_SETTINGS_MODULE": settings_module,
        "DEBUG": "0",
        "SECRET_KEY": "bench-only-secret-key-0123456789abcdefghijklmnopqrstuvwxyz",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SECURE_SSL_REDIRECT": "0",
        "SESSION_COOKIE_SECURE": "0",
        "CSRF_COOKIE_SECURE": "0",
        "SECURE_HSTS_SECONDS": "0",
        "STATIC_MANIFEST": "0",
        "DATABASE_CONN_MAX_AGE": "600",
        "LOG_LEVEL": "ERROR",
        "PYTHONPATH": str(ROOT),
        # One token polls far faster than a scheduler would: the rate limit is counted (its cost is in the
        # numbers) but set high enough never to answer 429.
        "API_RATE_SCHEDULER": "100000000/minute",
        "API_RATE_USER": "100000000/minute",
    }
    env.pop("CELERY_BROKER_URL", None)
    return env


def recreate_database(db_name: str) -> None:
    """Drop and create `db_name` (only that one) on the benchmark's PostgreSQL server."""
    import psycopg

    with psycopg.connect(f"{BENCH_PG}/postgres", autocommit=True) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {db_name}")
        connection.execute(f"CREATE DATABASE {db_name}")


def migrated_database(db_name: str) -> dict[str, str]:
    """A fresh `db_name`, migrated, with this process set up on it as Django (production settings, `production_env`);
    returns that environment, for the gunicorn the benchmark starts beside it."""
    env = production_env(db_name=db_name)
    recreate_database(db_name)
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return env

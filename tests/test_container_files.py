"""The Dockerfile and compose.yaml stay true to the app: probes, commands and variables that exist.

This machine cannot build the image (no container registry to pull a base from; see docs/deploy.md),
so these checks read the files the way the builder and compose will.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from tests.lint.test_configuration_docs import variables_documented

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = yaml.safe_load((ROOT / "compose.yaml").read_text())
DOCKERFILE = (ROOT / "Dockerfile").read_text()
APP_SERVICES = ("migrate", "web", "worker", "beat")


def test_compose_runs_the_app_beside_postgresql_and_redis():
    services = COMPOSE["services"]
    assert set(services) == {"db", "redis", *APP_SERVICES}
    assert services["db"]["image"].startswith("postgres:") and services["redis"]["image"].startswith("redis:")
    assert services["worker"]["command"][:4] == ["celery", "-A", "config", "worker"]
    assert services["beat"]["command"][:4] == ["celery", "-A", "config", "beat"]
    assert services["migrate"]["command"] == ["python", "manage.py", "migrate", "--no-input"]
    for name in ("web", "worker", "beat"):
        assert services[name]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"


def test_the_probes_are_wired_to_the_apps_endpoints():
    web_check = " ".join(COMPOSE["services"]["web"]["healthcheck"]["test"])
    assert "http://127.0.0.1:8000/readyz" in web_check
    assert re.search(r"HEALTHCHECK .*\n.*http://127\.0\.0\.1:8000/healthz", DOCKERFILE)
    for name in ("db", "redis"):
        assert COMPOSE["services"][name]["healthcheck"]["test"]


def test_every_variable_compose_sets_is_one_docket_reads():
    documented = variables_documented()
    for name in APP_SERVICES:
        environment = COMPOSE["services"][name]["environment"]
        unknown = set(environment) - documented
        assert not unknown, f"{name} sets variables docs/configuration.md does not know: {sorted(unknown)}"
    assert "SECRET_KEY" in COMPOSE["services"]["web"]["environment"]


def test_the_dockerfile_copies_and_runs_what_exists():
    assert "COPY requirements-pip.txt requirements.txt requirements-ldap.txt ./" in DOCKERFILE
    locks = ("requirements-pip.txt", "requirements.txt", "requirements-ldap.txt")
    assert all((ROOT / name).is_file() for name in locks)
    command = re.search(r'^CMD \["gunicorn", "([\w.]+)"', DOCKERFILE, re.MULTILINE)
    assert command is not None and (ROOT / (command[1].replace(".", "/") + ".py")).is_file()
    assert "collectstatic --no-input" in DOCKERFILE
    assert re.search(r"^USER docket$", DOCKERFILE, re.MULTILINE)  # not root


def test_the_image_and_the_documented_command_run_gthread_workers_that_are_recycled():
    readme = (ROOT / "README.md").read_text()
    deploy = (ROOT / "docs" / "deploy.md").read_text()
    cmd = re.search(r"^CMD (\[.*?\])$", DOCKERFILE, re.MULTILINE | re.DOTALL)
    assert cmd is not None
    image = " ".join(re.findall(r'"([^"]*)"', cmd[1]))
    for text in (image, readme.replace("\\\n", " "), deploy.replace("\\\n", " ")):
        command = re.search(r"gunicorn config\.wsgi[^\n]*", text)
        assert command is not None
        for flag in ("--worker-class gthread", "--threads 4", "--max-requests 1000", "--max-requests-jitter 100"):
            assert flag in command[0], (flag, command[0])

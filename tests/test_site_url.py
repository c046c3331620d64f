"""SITE_URL (e-mail links, the commands seed_demo prints) follows where `make run` serves, unless it is set."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# The settings are read (config/settings.py runs, with its checks of HOST, PORT and SITE_URL) on the first attribute
# asked for; the apps are not loaded (django.setup(): WeasyPrint and the rest, about 1.5 s of CPU a process), as
# nothing here reads them and no app changes SITE_URL.
PRINT_SITE_URL = (
    "import os; os.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings'; "
    "from django.conf import settings; print('SITE_URL=' + settings.SITE_URL)"
)


def settings_with(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PRINT_SITE_URL], cwd=REPO, env={"PATH": "/usr/bin:/bin", "DEBUG": "1", **env},
        capture_output=True, text=True, check=False,
    )


@pytest.mark.parametrize(
    ("env", "site_url"),
    [
        ({}, "http://127.0.0.1:8000"),
        ({"PORT": "8123"}, "http://127.0.0.1:8123"),
        ({"HOST": "0.0.0.0", "PORT": "9000"}, "http://127.0.0.1:9000"),  # noqa: S104 (what make run is given)
        ({"HOST": "docket.local", "PORT": "8080"}, "http://docket.local:8080"),
        ({"HOST": "::1", "PORT": "8123"}, "http://[::1]:8123"),
        ({"HOST": "::", "PORT": "8123"}, "http://[::1]:8123"),
        ({"HOST": "", "PORT": "8123"}, "http://127.0.0.1:8123"),
        ({"PORT": "8123", "SITE_URL": "https://docket.example.com/"}, "https://docket.example.com"),
    ],
)
def test_site_url_follows_host_and_port_unless_set(env, site_url):
    result = settings_with(env)
    assert result.returncode == 0, result.stderr
    assert f"SITE_URL={site_url}\n" in result.stdout


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"PORT": "99999"}, "PORT must be at most 65535; got 99999"),
        ({"PORT": "http"}, "PORT must be a whole number"),
        ({"SITE_URL": "docket.example.com"}, "SITE_URL must be an http:// or https:// URL"),
    ],
)
def test_a_wrong_host_port_or_site_url_is_refused_by_name(env, message):
    result = settings_with(env)
    assert result.returncode != 0
    assert message in result.stderr


def test_make_run_with_a_port_gives_the_settings_that_port(tmp_path):
    """`make run PORT=8123`: every command it runs (migrate, seed_demo, runserver) sees SITE_URL on 8123."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    fake_python = venv / "bin" / "python"
    fake_python.write_text(f"#!/bin/sh\nexec {sys.executable} -c \"{PRINT_SITE_URL}\"\n")
    fake_python.chmod(fake_python.stat().st_mode | stat.S_IEXEC)
    (venv / ".pip").touch()  # newer than requirements-pip.txt,
    (venv / ".installed").touch()  # and this newer than requirements.txt: make installs nothing
    env = {key: value for key, value in os.environ.items() if key not in {"HOST", "PORT", "SITE_URL", "DEBUG"}}
    result = subprocess.run(
        ["make", "-s", "-C", str(REPO), "run", f"VENV={venv}", "PORT=8123"],
        env=env, capture_output=True, text=True, check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("SITE_URL=http://127.0.0.1:8123\n") == 3
    assert "Docket is at http://127.0.0.1:8123/" in result.stdout

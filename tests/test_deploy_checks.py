"""Production settings, as `manage.py check --deploy` and a browser see them.

The checks run `manage.py` in a subprocess with a production environment (DEBUG off, a random
50+ character secret, a real host name) and nothing of the test settings, so what they prove is
what an operator gets from the environment variables of docs/configuration.md.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from django.test import Client

from core.security import HEADER as CSP

ROOT = Path(__file__).resolve().parent.parent
# A database of their own, empty (a checkout's db.sqlite3 may hold `make run`'s demo, which check --deploy refuses),
# in a folder removed when the test process ends.
FRESH_FOLDER = tempfile.TemporaryDirectory(prefix="docket-deploy-check-")
FRESH_DB = f"sqlite:///{FRESH_FOLDER.name}/fresh.sqlite3"


def production_env(**overrides: str) -> dict[str, str]:
    env = {key: os.environ[key] for key in ("PATH", "HOME", "LANG", "SYSTEMROOT") if key in os.environ}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(48),  # 64 characters
        ALLOWED_HOSTS="docket.example.com",
        CSRF_TRUSTED_ORIGINS="https://docket.example.com",
        DATABASE_URL=FRESH_DB,
        CACHE_URL="redis://127.0.0.1:6379/0",  # read by no check: a shared cache is what production has
    )
    env.update(overrides)
    return env


def manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=production_env(**env), capture_output=True, text=True,
        timeout=120, check=False,
    )


def test_check_deploy_finds_nothing_under_production_settings() -> None:
    result = manage("check", "--deploy", "--fail-level", "DEBUG")
    assert result.returncode == 0, result.stderr + result.stdout
    assert "System check identified no issues (1 silenced)." in result.stdout  # W021, preload off: see settings


def test_the_preload_warning_is_silenced_only_while_preload_is_off() -> None:
    # Django's security checks only (the whole set, URLs and the API schema included, ran in the test above).
    result = manage("check", "--deploy", "--tag", "security", "--fail-level", "DEBUG", SECURE_HSTS_PRELOAD="1")
    assert result.returncode == 0 and "no issues (0 silenced)" in result.stdout, result.stderr + result.stdout


def test_weakening_a_production_default_fails_the_check() -> None:
    """Each default switched off through its variable is named by its own warning (one process for the three)."""
    weakened = {"SESSION_COOKIE_SECURE": "security.W012", "SECURE_HSTS_SECONDS": "security.W004",
                "SECURE_SSL_REDIRECT": "security.W008"}
    result = manage("check", "--deploy", "--tag", "security", "--fail-level", "WARNING",
                    **dict.fromkeys(weakened, "0"))
    said = result.stderr + result.stdout
    assert result.returncode != 0 and [warning for warning in weakened.values() if warning not in said] == [], said


def test_production_defaults() -> None:
    """Secure cookies, HSTS for a year with subdomains, HTTPS redirect, a 12-hour session, lockouts, rate limits."""
    names = ["SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SESSION_COOKIE_HTTPONLY", "SESSION_COOKIE_SAMESITE",
             "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS", "SECURE_HSTS_PRELOAD",
             "SECURE_CONTENT_TYPE_NOSNIFF", "SECURE_REFERRER_POLICY", "X_FRAME_OPTIONS", "SESSION_COOKIE_AGE",
             "LOGIN_FAILURE_LIMIT", "LOGIN_FAILURE_WINDOW_SECONDS", "DEBUG", "MIDDLEWARE", "AXES_FAILURE_LIMIT",
             "AXES_LOCKOUT_PARAMETERS", "AXES_HANDLER", "LOGIN_ADDRESS_FAILURE_LIMIT",
             "AUTHENTICATION_BACKENDS", "REST_FRAMEWORK", "DOCKET_TOKEN_MAX_AGE_DAYS"]
    code = (
        "import json; from django.conf import settings as s; "
        f"print(json.dumps({{n: getattr(s, n) for n in {names}}}))"
    )
    result = manage("shell", "--no-imports", "-v", "0", "-c", code)
    assert result.returncode == 0, result.stderr
    values: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    assert values["DEBUG"] is False
    assert values["SESSION_COOKIE_SECURE"] and values["CSRF_COOKIE_SECURE"] and values["SESSION_COOKIE_HTTPONLY"]
    assert values["SESSION_COOKIE_SAMESITE"] == "Lax"
    assert values["SECURE_SSL_REDIRECT"] and values["SECURE_HSTS_SECONDS"] >= 31536000
    assert values["SECURE_HSTS_INCLUDE_SUBDOMAINS"] and not values["SECURE_HSTS_PRELOAD"]
    assert values["SECURE_CONTENT_TYPE_NOSNIFF"] and values["SECURE_REFERRER_POLICY"] == "same-origin"
    assert values["X_FRAME_OPTIONS"] == "DENY"
    assert values["SESSION_COOKIE_AGE"] <= 12 * 3600
    assert values["LOGIN_FAILURE_LIMIT"] <= 10 and values["LOGIN_FAILURE_WINDOW_SECONDS"] >= 300
    assert "core.security.ContentSecurityPolicyMiddleware" in values["MIDDLEWARE"]
    # Sign-in lockouts per username and client address, checked before any other backend sees a password.
    # Sign-in lockouts per username and client address, and per address at a higher limit (committee/lockouts.py).
    assert values["AXES_LOCKOUT_PARAMETERS"] == [["username", "ip_address"], "ip_address"]
    assert values["AXES_HANDLER"] == "committee.lockouts.LockoutHandler"
    assert values["AXES_FAILURE_LIMIT"] == values["LOGIN_FAILURE_LIMIT"] < values["LOGIN_ADDRESS_FAILURE_LIMIT"] <= 50
    assert values["AUTHENTICATION_BACKENDS"][0] == "axes.backends.AxesStandaloneBackend"
    assert "axes.middleware.AxesMiddleware" in values["MIDDLEWARE"]
    assert values["REST_FRAMEWORK"]["DEFAULT_THROTTLE_RATES"] == {"scheduler": "600/minute", "user": "120/minute"}
    assert values["DOCKET_TOKEN_MAX_AGE_DAYS"] == 90


# --- headers on real responses -------------------------------------------------------------------


def test_security_headers_on_pages_and_the_api(world: Any, settings: Any) -> None:
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    client = Client()
    client.force_login(world.member_a)
    for path in ("/requests/", "/archive/", "/api/v1/cycles/", "/accounts/login/"):
        response = client.get(path, secure=True)
        assert response.status_code == 200, path
        assert response["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"
        assert response["X-Content-Type-Options"] == "nosniff"
        assert response["X-Frame-Options"] == "DENY"
        assert response["Referrer-Policy"] == "same-origin"
        assert response["Cross-Origin-Opener-Policy"] == "same-origin"
        policy = dict(part.split(" ", 1) for part in response[CSP].split("; "))
        assert policy["script-src"].startswith("'self' 'nonce-") and "unsafe" not in policy["script-src"]
        assert policy["object-src"] == "'none'" and policy["frame-ancestors"] == "'none'"
        assert policy["default-src"] == "'self'" and policy["form-action"] == "'self'"


def test_each_response_has_its_own_nonce(world: Any) -> None:
    client = Client()
    nonces = {client.get("/accounts/login/")[CSP].split("'nonce-")[1].split("'")[0] for _ in range(3)}
    assert len(nonces) == 3


def test_no_template_has_inline_script() -> None:
    """Scripts are static files: an inline <script> (but a json_script data block) would be refused by the CSP."""
    offenders = []
    for template in (ROOT / "templates").rglob("*.html"):
        if "/print/" in template.as_posix():  # rendered for WeasyPrint only, never served to a browser
            continue
        text = template.read_text()
        for chunk in text.split("<script")[1:]:
            tag = chunk.split(">", 1)[0]
            if "src=" not in tag and "application/json" not in tag:
                offenders.append(template.relative_to(ROOT).as_posix())
        if " on" in text and any(f" on{event}=" in text for event in ("click", "load", "submit", "change", "input")):
            offenders.append(template.relative_to(ROOT).as_posix() + " (inline event handler)")
    assert not offenders, offenders


def test_session_cookie_is_secure_httponly_and_expires(world: Any, settings: Any) -> None:
    settings.SESSION_COOKIE_SECURE = True
    settings.SESSION_EXPIRE_AT_BROWSER_CLOSE = False
    client = Client()
    response = client.post("/accounts/login/", {"username": "member_a", "password": "pw"}, secure=True)
    assert response.status_code == 302
    cookie = response.cookies[settings.SESSION_COOKIE_NAME]
    assert cookie["secure"] and cookie["httponly"] and cookie["samesite"] == "Lax"
    assert int(cookie["max-age"]) == settings.SESSION_COOKIE_AGE


def test_writes_without_the_csrf_token_are_refused(world: Any) -> None:
    """A page or the API used with the session cookie needs the CSRF token; a personal token needs none (no cookie)."""
    from committee.services import personal_token_create

    browser = Client(enforce_csrf_checks=True)
    assert browser.post("/accounts/login/", {"username": "member_a", "password": "pw"}).status_code == 403
    browser.force_login(world.member_a)
    assert browser.post("/profile/", {"receive": []}).status_code == 403
    assert browser.post("/requests/new/", {}).status_code == 403
    assert browser.post("/api/v1/teams/team-a/requests/", {}, content_type="application/json").status_code == 403
    _row, token = personal_token_create(user=world.member_a, name="script")
    script = Client(enforce_csrf_checks=True, HTTP_AUTHORIZATION=f"Token {token}")
    assert script.post("/api/v1/teams/team-a/requests/", {}, content_type="application/json").status_code == 400

"""Settings helpers refuse malformed values with a message naming the variable."""

from __future__ import annotations

import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import database_from_url, env_bool, env_int, env_list, env_networks, env_rate


@pytest.mark.parametrize(("raw", "expected"), [("1", True), ("true", True), ("ON", True), ("0", False), ("off", False)])
def test_env_bool_accepts_the_documented_spellings(monkeypatch, raw, expected):
    monkeypatch.setenv("SOME_FLAG", raw)
    assert env_bool("SOME_FLAG") is expected


@pytest.mark.parametrize("raw", ["yes", "no", "2", "truthy"])
def test_env_bool_refuses_anything_else_naming_the_variable(monkeypatch, raw):
    monkeypatch.setenv("SOME_FLAG", raw)
    with pytest.raises(ImproperlyConfigured, match="SOME_FLAG"):
        env_bool("SOME_FLAG")


def test_env_int_refuses_non_numbers_and_values_below_minimum(monkeypatch):
    monkeypatch.setenv("PAGE", "ten")
    with pytest.raises(ImproperlyConfigured, match="PAGE must be a whole number"):
        env_int("PAGE", 5)
    monkeypatch.setenv("PAGE", "0")
    with pytest.raises(ImproperlyConfigured, match="PAGE must be at least 1"):
        env_int("PAGE", 5, minimum=1)
    monkeypatch.delenv("PAGE")
    assert env_int("PAGE", 5) == 5


@pytest.mark.parametrize("raw", ["²", "１２", "+3", "1_000", "3.0", "--3", "-"])
def test_env_int_takes_ascii_digits_only(monkeypatch, raw):
    monkeypatch.setenv("PAGE", raw)
    with pytest.raises(ImproperlyConfigured, match="PAGE must be a whole number"):
        env_int("PAGE", 5)


def test_env_int_reads_a_signed_number_with_spaces_around(monkeypatch):
    monkeypatch.setenv("OFFSET", " -12 ")
    assert env_int("OFFSET", 0) == -12
    monkeypatch.setenv("OFFSET", "007")
    assert env_int("OFFSET", 0) == 7


def test_env_networks_reads_cidrs_and_single_addresses(monkeypatch):
    monkeypatch.setenv("DOCKET_TRUSTED_PROXIES", " 10.1.2.3/8, 127.0.0.1 ,fd00::/64,")
    assert env_networks("DOCKET_TRUSTED_PROXIES", []) == ["10.0.0.0/8", "127.0.0.1/32", "fd00::/64"]
    monkeypatch.setenv("DOCKET_TRUSTED_PROXIES", "")
    assert env_networks("DOCKET_TRUSTED_PROXIES", ["127.0.0.1/32"]) == []
    monkeypatch.delenv("DOCKET_TRUSTED_PROXIES")
    assert env_networks("DOCKET_TRUSTED_PROXIES", ["127.0.0.1/32"]) == ["127.0.0.1/32"]


@pytest.mark.parametrize("raw", ["10.0.0.300/8", "nginx", "10.0.0.0/33", "127.0.0.1;10.0.0.0/8", "*"])
def test_env_networks_refuses_anything_else_naming_the_variable(monkeypatch, raw):
    monkeypatch.setenv("DOCKET_TRUSTED_PROXIES", raw)
    with pytest.raises(ImproperlyConfigured, match=r"DOCKET_TRUSTED_PROXIES: .* is not a network"):
        env_networks("DOCKET_TRUSTED_PROXIES", [])


def test_start_refuses_an_address_limit_not_above_the_username_limit():
    result = _start({"DEBUG": "1", "LOGIN_FAILURE_LIMIT": "5", "LOGIN_ADDRESS_FAILURE_LIMIT": "5"})
    assert result.returncode != 0
    assert "LOGIN_ADDRESS_FAILURE_LIMIT must be above LOGIN_FAILURE_LIMIT (5); got 5" in result.stderr


def test_env_list_splits_on_commas(monkeypatch):
    monkeypatch.setenv("HOSTS", "a.example, b.example,,")
    assert env_list("HOSTS", []) == ["a.example", "b.example"]


@pytest.mark.parametrize(("raw", "expected"), [("600/min", "600/minute"), ("5/s", "5/second"), (" 10/Hour ", "10/hour"),
                                             ("1/day", "1/day"), ("", "120/minute")])
def test_env_rate_reads_a_rate(monkeypatch, raw, expected):
    monkeypatch.setenv("API_RATE", raw)
    assert env_rate("API_RATE", "120/minute") == expected


@pytest.mark.parametrize("raw", ["600", "0/minute", "-1/minute", "ten/minute", "600/week", "600/minutes", "1.5/s",
                                 "²/minute", "６００/minute"])
def test_env_rate_refuses_anything_else_naming_the_variable(monkeypatch, raw):
    monkeypatch.setenv("API_RATE", raw)
    with pytest.raises(ImproperlyConfigured, match="API_RATE must be a number of requests per second"):
        env_rate("API_RATE", "120/minute")


def test_database_url_parsing():
    pg = database_from_url("DATABASE_URL", "postgres://u:p%40ss@db.example:5433/docket?sslmode=require")
    assert pg["ENGINE"] == "django.db.backends.postgresql"
    parts = (pg["NAME"], pg["USER"], pg["PASSWORD"], pg["HOST"], pg["PORT"])
    assert parts == ("docket", "u", "p@ss", "db.example", "5433")
    assert pg["OPTIONS"] == {"sslmode": "require"}
    assert database_from_url("DATABASE_URL", "sqlite:////tmp/x.db")["NAME"] == "/tmp/x.db"
    with pytest.raises(ImproperlyConfigured, match="DATABASE_URL must start with"):
        database_from_url("DATABASE_URL", "mysql://db/x")
    with pytest.raises(ImproperlyConfigured, match="must name a database"):
        database_from_url("DATABASE_URL", "postgres://db.example")


SETUP = "import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings'; django.setup()"


def _start(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SETUP],
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        check=False,
    )


def test_production_start_refuses_missing_secret_key():
    result = _start({"DEBUG": "0"})
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_production_start_refuses_malformed_debug():
    result = _start({"DEBUG": "yes"})
    assert result.returncode != 0
    assert "DEBUG must be one of" in result.stderr


def test_debug_start_needs_nothing_else():
    assert _start({"DEBUG": "1"}).returncode == 0

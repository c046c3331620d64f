"""Numbers and choices from the environment are checked against their bounds, naming the variable."""

from __future__ import annotations

import math

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import env_choice, env_float, env_int
from tests.test_settings_env import _start


def test_env_float_refuses_values_outside_its_bounds(monkeypatch):
    monkeypatch.setenv("HALF_LIFE", "-3")
    with pytest.raises(ImproperlyConfigured, match="HALF_LIFE must be above 0; got -3"):
        env_float("HALF_LIFE", 2.0, above=0)
    monkeypatch.setenv("HALF_LIFE", "0")
    with pytest.raises(ImproperlyConfigured, match="HALF_LIFE must be above 0; got 0"):
        env_float("HALF_LIFE", 2.0, above=0)
    monkeypatch.setenv("HALF_LIFE", "0.5")
    with pytest.raises(ImproperlyConfigured, match=r"HALF_LIFE must be at least 1; got 0\.5"):
        env_float("HALF_LIFE", 2.0, minimum=1)
    monkeypatch.setenv("HALF_LIFE", "600")
    with pytest.raises(ImproperlyConfigured, match="HALF_LIFE must be at most 520; got 600"):
        env_float("HALF_LIFE", 2.0, maximum=520)
    monkeypatch.setenv("HALF_LIFE", "0.5")
    assert env_float("HALF_LIFE", 2.0, above=0, maximum=520) == 0.5


@pytest.mark.parametrize("raw", ["nan", "inf", "-inf"])
def test_env_float_refuses_what_is_not_a_finite_number(monkeypatch, raw):
    monkeypatch.setenv("TIMEOUT", raw)
    assert not math.isfinite(float(raw))
    with pytest.raises(ImproperlyConfigured, match="TIMEOUT must be a finite number"):
        env_float("TIMEOUT", 2.0)


def test_env_int_refuses_values_above_its_maximum(monkeypatch):
    monkeypatch.setenv("PAGE", "1001")
    with pytest.raises(ImproperlyConfigured, match="PAGE must be at most 1000; got 1001"):
        env_int("PAGE", 100, minimum=1, maximum=1000)
    monkeypatch.setenv("PAGE", "1000")
    assert env_int("PAGE", 100, minimum=1, maximum=1000) == 1000


def test_env_choice_takes_only_the_exact_spellings(monkeypatch):
    levels = ["DEBUG", "INFO", "WARNING"]
    monkeypatch.setenv("LEVEL", "info")
    with pytest.raises(ImproperlyConfigured, match="LEVEL must be one of DEBUG, INFO, WARNING; got 'info'"):
        env_choice("LEVEL", "WARNING", levels)
    monkeypatch.setenv("LEVEL", "")
    assert env_choice("LEVEL", "WARNING", levels) == "WARNING"
    monkeypatch.setenv("LEVEL", "INFO")
    assert env_choice("LEVEL", "WARNING", levels) == "INFO"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DOCKET_FAIRSHARE_HALF_LIFE_WEEKS": "-3"}, "DOCKET_FAIRSHARE_HALF_LIFE_WEEKS must be above 0; got -3"),
        ({"DOCKET_FAIRSHARE_HALF_LIFE_WEEKS": "0"}, "DOCKET_FAIRSHARE_HALF_LIFE_WEEKS must be above 0; got 0"),
        ({"DOCKET_FAIRSHARE_TRAILING_WEEKS": "0"}, "DOCKET_FAIRSHARE_TRAILING_WEEKS must be at least 1; got 0"),
        ({"CELERY_BROKER_CONNECTION_TIMEOUT": "-1"}, "CELERY_BROKER_CONNECTION_TIMEOUT must be above 0"),
        ({"API_PAGE_SIZE": "5000"}, "API_PAGE_SIZE must be at most 1000; got 5000"),
        ({"LOG_LEVEL": "LOUD"}, "LOG_LEVEL must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL; got 'LOUD'"),
        ({"LANGUAGE_CODE": "xx"}, "LANGUAGE_CODE must be one of en, zh-hans; got 'xx'"),
    ],
)
def test_start_refuses_an_out_of_range_setting_naming_it(env, message):
    result = _start({"DEBUG": "1", **env})
    assert result.returncode != 0
    assert message in result.stderr


def test_start_takes_a_valid_log_level_and_half_life():
    assert _start({"DEBUG": "1", "LOG_LEVEL": "INFO", "DOCKET_FAIRSHARE_HALF_LIFE_WEEKS": "0.5"}).returncode == 0

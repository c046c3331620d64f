"""One strict reading of whole numbers from outside: ASCII digits only, a bounded length, else None.

Docket's views read them with `core.parsers.parse_whole_number`; the scheduler package, installed apart from Docket
with the standard library only, has its own `docket_scheduler.base.parse_whole_number`. Both are held to the same
cases here."""

from __future__ import annotations

import argparse

import pytest

from committee.outbox import TASK_ID_PREFIX, message_id_from
from core.parsers import parse_whole_number as view_side_parse
from docket_scheduler.base import parse_whole_number as scheduler_side_parse
from docket_scheduler.cli import positive_int
from docket_scheduler.slurm_qos import Qos

# The views' parser (core/parsers.py) and the scheduler package's copy (standard library only) read alike.
PARSERS = [pytest.param(view_side_parse, id="core"), pytest.param(scheduler_side_parse, id="scheduler")]


@pytest.mark.parametrize(("text", "expected"), [
    ("0", 0), ("42", 42), ("007", 7), ("9" * 18, int("9" * 18)),
    ("²", None), ("１２", None), ("٣", None), ("-1", None), ("+1", None), (" 1", None), ("1.0", None), ("", None),
    (None, None), ("9" * 19, None),
])
@pytest.mark.parametrize("parse_whole_number", PARSERS)
def test_only_ascii_digits_of_a_bounded_length_are_a_whole_number(text, expected, parse_whole_number):
    assert parse_whole_number(text) == expected


@pytest.mark.parametrize("parse_whole_number", PARSERS)
def test_the_length_bound_is_the_callers(parse_whole_number):
    assert parse_whole_number("1234567", max_digits=6) is None
    assert parse_whole_number("123456", max_digits=6) == 123456


def test_the_scheduler_side_and_the_outbox_read_numbers_through_it():
    assert message_id_from(f"{TASK_ID_PREFIX}²") is None
    assert message_id_from(f"{TASK_ID_PREFIX}12") == 12
    with pytest.raises(argparse.ArgumentTypeError, match="not a positive whole number"):
        positive_int("²")
    assert positive_int("3") == 3
    assert Qos(name="q", grp_tres={"gres/gpu": "²"}, preempt=frozenset()).gpus is None
    assert Qos(name="q", grp_tres={"gres/gpu": "8"}, preempt=frozenset()).gpus == 8

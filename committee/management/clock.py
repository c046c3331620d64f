"""What the clock's commands share: the `--now` option, so an operator can run a job as of another moment."""

from __future__ import annotations

from argparse import ArgumentParser
from datetime import datetime

from django.core.management.base import CommandError
from django.utils import timezone

from committee import weeks


def add_now_argument(parser: ArgumentParser) -> None:
    parser.add_argument(
        "--now",
        help="act as of this moment, ISO 8601 (e.g. 2026-12-04T18:00); without an offset it is committee time. "
        "Default: the current time.",
    )


def parse_now(value: str | None) -> datetime:
    if not value:
        return timezone.now()
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise CommandError(f"--now must be an ISO 8601 date and time, e.g. 2026-12-04T18:00; got {value!r}") from None
    if timezone.is_naive(moment):
        moment = moment.replace(tzinfo=weeks.committee_zone())
    return moment

"""Recompute the archive's hash chain and name the first revision that does not match."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from reports import selectors


class Command(BaseCommand):
    help = (
        "Recompute every archive revision's hash, in chain order. Exits 1 and names the first revision that "
        "does not match (a changed field, a deleted row, rows swapped); exits 0 on an intact chain."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--expect-head",
            metavar="HASH",
            help="The head hash kept outside Docket; the chain must still end there.",
        )
        parser.add_argument(
            "--print-head",
            action="store_true",
            help="On an intact chain print only its head hash (keep it with a backup: read it before pg_dump).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        result = selectors.archive_verify(expected_head_hash=options.get("expect_head"))
        if not result.ok:
            raise CommandError(result.message)
        self.stdout.write(result.head_hash if options["print_head"] else self.style.SUCCESS(result.message))

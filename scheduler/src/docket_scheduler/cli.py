"""The command line every program of the package shares: where Docket is, the token, the output, and for the two
syncs the loop, its backoff, the removal guard and what `--once` exits with.

Exit codes, the same for every program: 0 all went through; 1 something was refused or failed and is reported
(a window failed, an object kept, measured usage refused); 2 nothing could be done (Docket, the token or the
scheduler's tools could not be used); 130 interrupted. A bad option exits 2 through argparse.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TextIO

from docket_scheduler.base import DEFAULT_MAX_REMOVE_PCT, SchedulerSync, parse_utc, parse_whole_number
from docket_scheduler.client import DocketClient, DocketError, StateFile, run_pass

# The programs' option types, one each: argparse turns ArgumentTypeError into a usage error naming the option.

def positive_int(text: str) -> int:
    number = parse_whole_number(text)
    if number is None or number <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return number


def pair(metavar: str) -> Callable[[str], tuple[str, str]]:
    """An option of the form KEY=VALUE (`metavar` names it in the error, e.g. "ACCOUNT=TEAM")."""

    def parse(text: str) -> tuple[str, str]:
        key, sep, value = text.partition("=")
        if not sep or not key or not value:
            raise argparse.ArgumentTypeError(f"{text!r} is not {metavar}")
        return key, value

    return parse


def instant(text: str) -> datetime:
    """An ISO 8601 time with its UTC offset ("Z" accepted), in UTC."""
    try:
        return parse_utc(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be positive")
    return value


def percent(text: str) -> int:
    value = parse_whole_number(text, max_digits=3)
    if value is None or value > 100:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole percentage from 0 to 100")
    return value


def add_docket_options(parser: argparse.ArgumentParser) -> None:
    """Docket's URL, the cluster and its scheduler token (`--token`, `--token-file` or $DOCKET_TOKEN), the deadline."""
    parser.add_argument("--url", "--docket-url", dest="url", required=True,
                        help="Docket's base URL, e.g. https://docket.example.org")
    token = parser.add_mutually_exclusive_group()
    token.add_argument("--token", default=None,
                       help="the cluster's scheduler token (default: $DOCKET_TOKEN, which keeps it out of `ps`)")
    token.add_argument("--token-file", type=Path, help="read the token from this file (mode 0600)")
    parser.add_argument("--cluster", required=True, help="the cluster's slug in Docket")
    parser.add_argument("--timeout", type=positive_float, default=30.0, metavar="SECONDS",
                        help="each request to Docket must be answered whole within this (30)")


def add_sync_options(parser: argparse.ArgumentParser, *, interval_s: float, interval_help: str) -> None:
    """`add_docket_options` and what every sync adds: the loop, its backoff and the removal guard."""
    add_docket_options(parser)
    parser.add_argument("--dry-run", action="store_true", help="print the plan; change and report nothing")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true", help="one pass, then exit (non-zero if a window failed)")
    mode.add_argument("--interval", type=positive_float, default=interval_s, metavar="SECONDS", help=interval_help)
    parser.add_argument("--resync", type=positive_float, default=3600.0, metavar="SECONDS",
                        help="a full pass at least this often even when Docket says nothing changed (3600)")
    parser.add_argument("--max-backoff", type=positive_float, default=900.0, metavar="SECONDS",
                        help="after failed passes the wait doubles, with jitter, up to this (900)")
    parser.add_argument("--state-file", type=Path, metavar="PATH",
                        help="keep the change sequence of the last list applied here, so that a restart or the next "
                             "--once run refuses an older list too (e.g. /var/lib/docket-scheduler/atlas.json)")
    parser.add_argument("--max-remove-pct", type=percent, default=DEFAULT_MAX_REMOVE_PCT, metavar="PCT",
                        help="a pass removes more than this share of what the sync manages, or anything live, "
                             f"only where Docket confirms each window's withdrawal ({DEFAULT_MAX_REMOVE_PCT})")


def docket_client(parser: argparse.ArgumentParser, args: argparse.Namespace,
                  env: Mapping[str, str] | None = None) -> DocketClient:
    """The client the options describe; a missing token or a URL that is not http(s) ends the program (exit 2)."""
    token = args.token or (os.environ if env is None else env).get("DOCKET_TOKEN")
    if args.token_file is not None:
        try:
            token = args.token_file.read_text().strip()
        except OSError as exc:
            parser.error(f"cannot read --token-file: {exc}")
    if not token:
        parser.error("--token, --token-file or $DOCKET_TOKEN is required")
    try:
        return DocketClient(args.url, token, args.cluster, timeout_s=args.timeout)
    except DocketError as exc:
        parser.error(str(exc))


def output(out: TextIO | None) -> TextIO:
    """Where the program prints: `out`, else stdout, line-buffered (under systemd stdout is a pipe, and without
    this the journal gets lines minutes late)."""
    if out is None and isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(line_buffering=True)
    return out or sys.stdout


def state_file(args: argparse.Namespace) -> StateFile | None:
    return StateFile(args.state_file) if args.state_file is not None else None


def run_sync(args: argparse.Namespace, *, client: DocketClient, adapter: SchedulerSync, loop: Callable[[], None],
             errors: tuple[type[Exception], ...], out: TextIO, now: datetime | None = None) -> int:
    """A sync's main after its options are read: `loop` until interrupted, or one pass with `--once`.

    `--once` exits 0 when every window is held (in sync, or short), 1 when one failed or the adapter has
    `problems` (an object that would not delete, or that the removal guard kept), 2 when Docket or the scheduler
    could not be used (`errors`)."""
    if not args.once:
        try:
            loop()
        except KeyboardInterrupt:
            return 130
        return 0
    state = state_file(args)
    try:
        applied = state.load() if state is not None else None
        result = run_pass(client, adapter, dry_run=args.dry_run, out=out, now=now, max_remove_pct=args.max_remove_pct,
                          applied_cursor=applied)
        if state is not None and result.cursor is not None and not args.dry_run:
            state.save(max(applied or 0, result.cursor))
    except errors as exc:
        print(f"sync failed: {exc}", file=out)
        return 2
    except OSError as exc:
        print(f"sync failed: cannot write the state file: {exc}", file=out)
        return 2
    problems: list[str] = getattr(adapter, "problems", [])
    for problem in problems:
        print(f"problem: {problem}", file=out)
    return 1 if result.failed or problems else 0

"""Slurm's command-line tools as the Slurm sync uses them: running scontrol and sacctmgr, and reading what
scontrol prints (its Key=Value lines, its times, the configuration).

scontrol and sacctmgr always run with TZ=UTC: reservation times are exchanged without an offset.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

SLURM_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"
# What Docket's cluster accounts allow; anything else is never put into a sacctmgr argument.
SLURM_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
NEEDED_ENFORCE = frozenset({"limits", "qos"})


class SlurmError(Exception):
    """scontrol could not be run or answered something unreadable; the pass is aborted."""


# --- times -------------------------------------------------------------------------------


def slurm_time(moment: datetime) -> str:
    """UTC without offset and without fractions: the only form scontrol accepts (run with TZ=UTC)."""
    return moment.astimezone(UTC).strftime(SLURM_TIME_FORMAT)


def parse_slurm_time(value: str) -> datetime:
    # scontrol runs with TZ=UTC, so its offset-less times are UTC.
    return datetime.strptime(value, SLURM_TIME_FORMAT).replace(tzinfo=UTC)


def whole_seconds(moment: datetime) -> datetime:
    """`moment` in UTC as Slurm stores it: without fractions of a second."""
    return moment.astimezone(UTC).replace(microsecond=0)


# --- reading scontrol ----------------------------------------------------------------------


def parse_fields(line: str) -> dict[str, str]:
    """Split one `scontrol -o` line into Key=Value pairs.

    Each token splits on its FIRST '=' (values such as TRES=cpu=128 contain '='); a token
    without '=' continues the previous value (a value with a space); "(null)" is empty.
    """
    fields: dict[str, str] = {}
    last: str | None = None
    for token in line.split():
        key, sep, value = token.partition("=")
        if sep:
            fields[key] = value
            last = key
        elif last is not None:
            fields[last] += " " + token
    return {key: "" if value == "(null)" else value for key, value in fields.items()}


@dataclass(frozen=True)
class SlurmConfig:
    """What the sync needs from `scontrol show config`."""

    cluster: str
    accounting_type: str
    enforce: frozenset[str]
    preempt_type: str

    def quota_problem(self) -> str | None:
        """Why Slurm cannot enforce a QOS quota here, if it cannot."""
        if self.accounting_type != "accounting_storage/slurmdbd":
            return (
                "accounting is needed for quotas (AccountingStorageType=accounting_storage/slurmdbd, "
                f"AccountingStorageEnforce=limits,qos; this cluster has AccountingStorageType="
                f"{self.accounting_type or 'none'}); or run the sync with --reservations-only"
            )
        missing = NEEDED_ENFORCE - self.enforce
        if missing:
            return (
                f"AccountingStorageEnforce lacks {','.join(sorted(missing))}: Slurm would not enforce "
                "a QOS quota (set AccountingStorageEnforce=associations,limits,qos)"
            )
        return None

    def preempt_problem(self) -> str | None:
        if self.preempt_type != "preempt/qos":
            return (
                f"PreemptType=preempt/qos is needed for preemptible work (this cluster has "
                f"{self.preempt_type or 'none'}): scavenger jobs would not yield to the owners"
            )
        return None


def parse_config(text: str) -> SlurmConfig:
    """Parse `scontrol show config` ("Key = Value" lines)."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip()
    enforce = values.get("AccountingStorageEnforce", "")
    return SlurmConfig(
        cluster=values.get("ClusterName", ""),
        accounting_type=values.get("AccountingStorageType", "").replace("(null)", ""),
        enforce=frozenset(part.strip().lower() for part in enforce.split(",") if part.strip() and part != "none"),
        preempt_type=values.get("PreemptType", "").replace("(null)", ""),
    )


# --- running the tools -------------------------------------------------------------------


@dataclass(frozen=True)
class SlurmTools:
    """How to run scontrol and sacctmgr: their paths, the environment (SLURM_CONF and the like; TZ=UTC is
    always forced on top) and how long one call may take."""

    scontrol: str = "scontrol"
    sacctmgr: str = "sacctmgr"
    env: Mapping[str, str] | None = None
    timeout_s: float = 60.0

    def run_scontrol(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        return self.run(self.scontrol, args)

    def run_sacctmgr(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        return self.run(self.sacctmgr, args)

    def run(self, tool: str, args: list[str]) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ if self.env is None else self.env)
        env["TZ"] = "UTC"
        try:
            # The argv is ours; the tool's path comes from the operator's command line.
            return subprocess.run(  # noqa: S603
                [tool, *args], env=env, capture_output=True, text=True, timeout=self.timeout_s, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SlurmError(f"cannot run {tool}: {exc}") from None


def tool_message(result: subprocess.CompletedProcess[str]) -> str:
    """Slurm's own words: stderr (stdout carries notes even on failure), de-duplicated."""
    lines: list[str] = []
    for line in (result.stderr.strip() or result.stdout.strip()).splitlines():
        # "slurm_update error: X" repeats "Error updating the reservation: X".
        if line.strip() and not any(line.split(": ", 1)[-1] in seen for seen in lines):
            lines.append(line.strip())
    return "; ".join(lines) or f"scontrol exited {result.returncode}"

"""A Chromium that never answers: the PDF goes without charts after the render's deadline, and nothing waits on.

The "Chromium" is a program that starts and then sleeps, so kaleido waits for a browser that never speaks.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import threading
from pathlib import Path

from reports import charts


def test_a_chromium_that_never_answers_leaves_the_pdf_without_charts(tmp_path: Path, settings, monkeypatch) -> None:
    silent = tmp_path / "chromium"
    pid_file = tmp_path / "chromium.pid"
    silent.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 600\n")
    silent.chmod(silent.stat().st_mode | stat.S_IXUSR)
    settings.CHROMIUM_PATH = str(silent)
    monkeypatch.setattr(charts, "RENDER_TIMEOUT_SECONDS", 1)
    chart = charts.demand_capacity_figure(
        {"capacity": [{"pool": "atlas/a100", "capacity_gpu_hours": 100, "requested_gpu_hours": 80,
                       "granted_gpu_hours": 60}]}
    )
    assert chart is not None

    rendered = charts.render_svgs([chart])

    assert rendered.svgs == {}
    assert rendered.missing_reason == "Drawing the charts took too long, so this PDF has no charts."
    # The drawing thread is a daemon: it cannot hold the process's exit.
    assert all(t.daemon for t in threading.enumerate() if t.name == "docket-charts")
    if pid_file.exists():  # the sleeping "browser" kaleido started for this test
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)

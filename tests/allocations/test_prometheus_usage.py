"""The Prometheus usage collector's parts that need no Prometheus: periods, keys and the command line."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import pytest

from docket_scheduler.prometheus_usage import Prometheus, PrometheusError, idempotency_key, main, periods

T = datetime(2026, 12, 1, tzinfo=UTC)


def test_periods_are_whole_and_aligned_to_multiples_of_their_length():
    hour = timedelta(hours=1)
    assert periods(T + timedelta(minutes=10), T + timedelta(hours=3, minutes=5), hour) == [
        (T + hour, T + 2 * hour), (T + 2 * hour, T + 3 * hour)]
    assert periods(T, T + timedelta(minutes=59), hour) == []
    six = timedelta(hours=6)
    assert [start.hour for start, _end in periods(T - timedelta(hours=1), T + timedelta(days=1), six)] == [0, 6, 12, 18]


def test_the_key_is_the_same_for_the_same_report_and_fits_the_api():
    key = idempotency_key(cluster="atlas", pool="a100", team="team-a", start=T, end=T + timedelta(hours=1))
    assert key == "prom-atlas-a100-team-a-20261201T000000Z-20261201T010000Z"
    long = idempotency_key(cluster="c" * 50, pool="p" * 50, team="t" * 50, start=T, end=T + timedelta(hours=1))
    assert len(long) <= 100 and long.startswith("prom-")
    assert long == idempotency_key(cluster="c" * 50, pool="p" * 50, team="t" * 50, start=T,
                                   end=T + timedelta(hours=1))
    assert long != idempotency_key(cluster="c" * 50, pool="p" * 50, team="t" * 49, start=T,
                                   end=T + timedelta(hours=1))


BASE = ["--url", "http://127.0.0.1:9", "--token", "x", "--cluster", "atlas", "--pool", "a100",
        "--prometheus", "http://127.0.0.1:9"]


@pytest.mark.parametrize(("args", "message"), [
    (["--team-map", "a=a", "--period", "3600", "--step", "7"], "--step 7 must divide --period 3600"),
    ([], "--team-map VALUE=TEAM or --team-accounts"),
    (["--team-map", "nobody"], "is not VALUE=TEAM"),
    (["--team-map", "a=a", "--label", "name-space"], "is not a Prometheus label name"),
    (["--team-map", "a=a", "--since", "2026-12-01T00:00:00"], "has no UTC offset"),
    (["--team-map", "a=a", "--since", "2026-12-02T00:00:00Z", "--until", "2026-12-01T00:00:00Z"],
     "--since must be before --until"),
])
def test_a_wrong_command_line_is_refused_naming_the_option(args, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([*BASE, *args])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_an_unreachable_prometheus_is_exit_2_with_the_reason():
    out = io.StringIO()
    code = main([*BASE, "--team-map", "a=a", "--no-windows", "--since", "2026-12-01T00:00:00Z",
                 "--until", "2026-12-01T01:00:00Z"], out=out)
    assert code == 2
    assert "usage collection failed: http://127.0.0.1:9/api/v1/query_range" in out.getvalue()


def test_an_unreachable_docket_is_exit_2_with_the_reason():
    out = io.StringIO()
    code = main([*BASE, "--team-map", "a=a", "--since", "2026-12-01T00:00:00Z", "--until", "2026-12-01T01:00:00Z"],
                out=out)
    assert code == 2
    assert "usage collection failed: GET http://127.0.0.1:9/api/v1/windows/?cluster=atlas&ends_after=" in out.getvalue()


def window(id_: int, start_h: int, end_h: int, *, gpus: int = 8, team: str = "team-a", pool: str = "a100"):
    from docket_scheduler.base import DesiredWindow

    return DesiredWindow(id=id_, plan_version=1, cluster="atlas", pool=pool, gpu_model="A100", scheduler_label="a100",
                         gpu_count=gpus, gpus_per_node=8, start=T + timedelta(hours=start_h),
                         end=T + timedelta(hours=end_h), team=team, account=None, tier="standard", request_id=None)


def test_a_report_names_the_teams_window_on_the_pool_holding_most_of_its_period():
    from docket_scheduler.prometheus_usage import window_for

    hour = {"start": T + timedelta(hours=9), "end": T + timedelta(hours=10)}
    windows = [window(1, 0, 9), window(2, 9, 12, gpus=4), window(3, 9, 10, gpus=8), window(4, 0, 24, team="team-b"),
               window(5, 0, 24, pool="h100")]
    assert window_for(windows, team="team-a", pool="a100", **hour) == 3  # 8 GPU-hours of the hour beat 4
    assert window_for([window(7, 9, 10), window(6, 8, 11)], team="team-a", pool="a100", **hour) == 6  # a tie
    assert window_for(windows, team="team-c", pool="a100", **hour) is None
    assert window_for([window(1, 0, 9)], team="team-a", pool="a100", **hour) is None  # ends as the hour starts


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://prometheus:9090", "prometheus:9090"])
def test_only_an_http_or_https_prometheus_is_ever_opened(url):
    with pytest.raises(PrometheusError, match="is not an http"):
        Prometheus(url)

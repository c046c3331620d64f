"""The elastic agent's decision (docket_scheduler.elastic_agent.decide) on plain data: the idle span counted in
minutes, a minute not measured, an owner whose QOS would not take its GPUs back, the reclaim, the bounds. The same
against the real Slurm, Prometheus and Docket: tests/allocations/test_elastic_agent_e2e.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from docket_scheduler.base import DesiredWindow
from docket_scheduler.elastic_agent import AgentPolicy, PoolBounds, WindowMinutes, decide, window_minutes

NOW = datetime(2026, 12, 2, 10, 0, 30, tzinfo=UTC)  # half a minute into 10:00: minutes up to 10:00 are read
POLICY = AgentPolicy(version=3, idle_threshold_pct=25, idle_span_minutes=5, offer_idle_to_preemptible=True,
                     pools={"a100": PoolBounds("a100", 64, "a100", burst_reserve_gpus=12, standby_gpus=6)})


def window(wid: int = 1, *, team: str = "team-a", gpus: int = 8, tier: str = "standard",
           start: datetime = NOW - timedelta(hours=2), standby: int = 0) -> DesiredWindow:
    return DesiredWindow(id=wid, plan_version=1, cluster="atlas", pool="a100", gpu_model="A100", scheduler_label="a100",
                         gpu_count=gpus, gpus_per_node=8, start=start, end=NOW + timedelta(hours=5), team=team,
                         account=f"{team}-acct", tier=tier, request_id=None, standby_gpus=standby)


def minutes(*values: float | None) -> list[Decimal | None]:
    return [None if v is None else Decimal(str(v)) for v in values]


def run(windows, measured, *, lent=None, owner_preempts=lambda w: True, policy=POLICY):
    return decide(policy=policy, pool="a100", windows=windows,
                  measured={k: WindowMinutes(next(w for w in windows if w.id == k), v) for k, v in measured.items()},
                  lent=lent or {}, now=NOW, owner_preempts=owner_preempts)


def test_a_window_under_the_threshold_every_minute_of_the_span_is_lent_what_it_does_not_use() -> None:
    decision = run([window()], {1: minutes(10, 12, 15, 20, 24.9)})
    [lend] = decision.actions
    assert (lend.kind, lend.window, lend.team, lend.gpus, lend.utilization_pct) == ("lend", 1, "team-a", 6,
                                                                                    Decimal("16.4"))
    assert lend.at == datetime(2026, 12, 2, 10, 0, tzinfo=UTC) and lend.span_minutes == 5
    # Nobody else was granted: 64 − 8 granted − 12 burst − 6 standby = 38 for preemptible work, plus 6 lent.
    assert (decision.base_gpus, dict(decision.lent), decision.scavenger_gpus) == (38, {1: 6}, 44)
    assert lend.key("atlas") == "elastic-atlas-a100-lend-w1-20261202T1000Z"
    assert run([window()], {1: minutes(10, 12, 15, 20, 24.9)}) == decision  # deterministic


def test_one_minute_at_the_threshold_one_not_measured_or_too_short_a_span_lends_nothing() -> None:
    assert run([window()], {1: minutes(10, 10, 25, 10, 10)}).actions == []  # at the threshold: not under
    assert run([window()], {1: minutes(10, None, 10, 10, 10)}).actions == []  # not measured is never idle
    assert run([window()], {1: minutes(10, 10, 10, 10)}).actions == []  # four minutes of five
    assert run([window(start=NOW - timedelta(minutes=3))], {1: minutes(0, 0, 0, 0, 0)}).actions == []
    assert run([window(tier="priority")], {1: minutes(0, 0, 0, 0, 0)}).actions == []  # a reservation
    no_offer = AgentPolicy(**{**POLICY.__dict__, "offer_idle_to_preemptible": False})
    assert run([window()], {1: minutes(0, 0, 0, 0, 0)}, policy=no_offer).actions == []


def test_a_window_whose_owner_could_not_take_it_back_is_never_lent() -> None:
    decision = run([window()], {1: minutes(0, 0, 0, 0, 0)}, owner_preempts=lambda w: False)
    assert decision.actions == [] and decision.scavenger_gpus == 38


def test_a_lent_window_is_taken_back_when_its_use_rises_or_it_is_no_longer_measured_or_active() -> None:
    kept = run([window()], {1: minutes(5, 5, 5, 5, 5)}, lent={1: 6})
    assert kept.actions == [] and dict(kept.lent) == {1: 6}
    rose = run([window()], {1: minutes(5, 5, 5, 5, 90)}, lent={1: 6})
    [reclaim] = rose.actions
    assert (reclaim.kind, reclaim.gpus, reclaim.utilization_pct) == ("reclaim", 6, Decimal(90))
    assert "rose to 90%" in reclaim.reason and dict(rose.lent) == {} and rose.scavenger_gpus == 38
    unmeasured = run([window()], {1: minutes(5, 5, 5, 5, None)}, lent={1: 6})
    assert [a.kind for a in unmeasured.actions] == ["reclaim"]
    ended = run([], {}, lent={1: 6})
    assert [(a.kind, a.reason) for a in ended.actions] == [("reclaim", "the window is no longer active")]
    assert ended.scavenger_gpus == 64 - 12 - 6


def test_a_windows_utilization_is_its_teams_gpus_busy_over_its_own_gpus() -> None:
    # Team A's GPUs summed 80% (two GPUs at 40%) of an 8-GPU window: 10% of the grant is busy.
    found = window_minutes([window()], {"team-a": minutes(80, 800, None)})
    assert list(found[1].minutes) == minutes(10, 100, None)
    # Two windows of one team in the pool: the team's measurement cannot be split, neither is measured.
    assert window_minutes([window(1), window(2)], {"team-a": minutes(0)}) == {}


def test_an_agent_that_never_reached_docket_does_nothing_and_says_why(tmp_path, capsys) -> None:
    from docket_scheduler.elastic_agent import main
    from tests.processes import free_port

    state = tmp_path / "elastic.json"
    code = main(["--url", f"http://127.0.0.1:{free_port()}", "--token", "t", "--cluster", "atlas", "--prometheus",
                 f"http://127.0.0.1:{free_port()}", "--state-file", str(state), "--once", "--timeout", "2",
                 "--now", "2026-12-02T10:00:30Z"])
    out = capsys.readouterr().out
    assert code == 2
    assert "Docket not reached" in out and "no elastic policy known: Docket has not been reached yet" in out
    assert not state.exists()  # nothing to remember, nothing applied


def test_the_state_file_keeps_what_the_agent_read_and_lent(tmp_path) -> None:
    from docket_scheduler.elastic_agent import AgentState, StateFile, window_to_state

    file = StateFile(tmp_path / "sub" / "elastic.json")
    assert file.load() == AgentState()
    kept = AgentState(policy={"version": 3}, policy_etag='"e"', windows=[window_to_state(window())],
                      lent={"1": {"pool": "a100", "team": "team-a", "gpus": 6}}, unreported=[{"kind": "lend"}])
    file.save(kept)
    assert file.load() == kept and oct(file.path.stat().st_mode & 0o777) == "0o600"
    assert DesiredWindow.from_api(file.load().windows[0]) == window()


# --- the burst reserve ------------------------------------------------------------------------------

def burst(waiting, *, pool_use=(90,) * 10, promoted=None, windows=None, policy=POLICY):
    from docket_scheduler.elastic_agent import decide_burst

    return decide_burst(policy=policy, pool="a100", windows=windows or [window()], waiting=waiting,
                        pool_minutes=minutes(*pool_use), promoted=promoted or {}, now=NOW)


def job(waited_min: float, *, account: str = "team-a-acct", reason: str = "QOSGrpGRES", qos: str | None = None,
        job_id: str = "41"):
    from docket_scheduler.elastic_agent import WaitingJob

    return WaitingJob(job_id, account, qos or f"docket-{account}", reason, int(waited_min * 60))


def test_a_job_waiting_over_thirty_minutes_for_its_quota_in_a_hot_pool_gets_the_burst_reserve() -> None:
    from docket_scheduler.elastic_agent import Promotion

    after, [promote] = burst([job(29), job(31, job_id="42")])
    assert after == {"team-a-acct": Promotion("team-a-acct", "a100", "team-a", 1, 12)}
    assert (promote.kind, promote.window, promote.team, promote.gpus, promote.utilization_pct,
            promote.queue_wait_minutes, promote.span_minutes) == ("promote", 1, "team-a", 12, Decimal(90),
                                                                  Decimal(31), 10)
    assert "job 42 waited 31.0 min" in promote.reason and promote.at == datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
    assert promote.key("atlas") == "elastic-atlas-a100-promote-w1-20261202T1000Z"


def test_no_burst_at_the_thresholds_in_a_cool_or_unmeasured_pool_or_for_a_job_not_held_by_its_own_quota() -> None:
    assert burst([job(30)]) == ({}, [])  # thirty minutes exactly: not over
    assert burst([job(31)], pool_use=(80,) * 10) == ({}, [])  # 80% exactly: not hot
    assert burst([job(31)], pool_use=(90,) * 9 + (None,)) == ({}, [])  # a minute not measured
    assert burst([job(31)], pool_use=(90,) * 9) == ({}, [])  # nine minutes of ten
    assert burst([job(31, reason="Resources")]) == ({}, [])  # the cluster is full, not its quota
    assert burst([job(31, qos="scavenger")]) == ({}, [])  # preemptible work is not granted work
    assert burst([job(31, account="team-z-acct")]) == ({}, [])  # no window here
    assert burst([job(31)], windows=[window(tier="priority")]) == ({}, [])  # a reservation has no quota QOS
    no_reserve = AgentPolicy(**{**POLICY.__dict__, "pools": {"a100": PoolBounds("a100", 64, "a100", 0, 6)}})
    assert burst([job(31)], policy=no_reserve) == ({}, [])


def test_the_burst_is_held_while_the_pool_is_hot_and_taken_back_when_it_cools_or_the_window_ends() -> None:
    from docket_scheduler.elastic_agent import Promotion

    held = {"team-a-acct": Promotion("team-a-acct", "a100", "team-a", 1, 12)}
    assert burst([], promoted=held) == (held, [])  # nothing waits any more: the job runs on the burst
    assert burst([], promoted=held, pool_use=(90,) * 9 + (40,)) == (held, [])  # a mean of 85%: still hot
    after, [demote] = burst([], promoted=held, pool_use=(90,) * 5 + (40,) * 5)
    assert after == {} and (demote.kind, demote.gpus, demote.utilization_pct) == ("demote", 12, Decimal(65))
    assert "use over 10 min fell to 65.0% (threshold 80%)" in demote.reason
    _after, [ended] = burst([], promoted=held, windows=[window(2, team="team-b")])
    assert ended.reason == "the window is no longer active"
    # One account a pool: a second waiting team does not get the reserve while the first holds it.
    assert burst([job(45, account="team-b-acct")], promoted=held,
                 windows=[window(), window(2, team="team-b")]) == (held, [])


def test_the_slurm_sync_keeps_the_agents_burst_until_its_lease_and_then_undoes_it() -> None:
    from datetime import timedelta

    from docket_scheduler.slurm_commands import SlurmConfig
    from docket_scheduler.slurm_qos import (
        AccountQos,
        Qos,
        QosSettings,
        burst_description,
        quota_desire,
        quota_status,
        reconcile_qos,
    )

    config = SlurmConfig("lab", "accounting_storage/slurmdbd", frozenset({"associations", "limits", "qos"}),
                         "preempt/qos")
    windows = [window()]
    desire = quota_desire(windows, NOW, config)
    base = desire.descriptions["team-a-acct"]
    lease = NOW + timedelta(minutes=4)
    # As sacctmgr shows it: the Description lowercased.
    raised = Qos("docket-team-a-acct", {"gres/gpu": "20"}, frozenset({"scavenger"}),
                 burst_description(base, 12, lease).lower())
    assert raised.burst is not None and raised.burst.gpus == 12 and raised.base_description == base.lower()
    qos = {"scavenger": Qos("scavenger", {}, frozenset()), raised.name: raised}
    assoc = {"team-a-acct": AccountQos("team-a-acct", frozenset({"scavenger", raised.name}), raised.name)}
    commands, refusals = reconcile_qos(desire, qos, assoc, cluster="lab", settings=QosSettings())
    assert (commands, refusals) == ([], {})  # within the lease: the sync leaves the raise alone
    status = quota_status(windows[0], desire, qos, assoc, QosSettings(), {}, NOW)
    assert status.state == "in_sync" and "raised by the elastic agent's burst of 12" in status.message
    later = quota_desire(windows, lease, config)  # the agent stopped renewing: the sync undoes the raise
    [command], _ = reconcile_qos(later, qos, assoc, cluster="lab", settings=QosSettings())
    assert "GrpTRES=gres/gpu=8" in command.argv and f"Description={later.descriptions['team-a-acct']}" in command.argv


# --- the cold standby ---------------------------------------------------------------------------------

def test_an_emergency_placed_on_the_cold_standby_wakes_it_five_minutes_before_it_starts_and_only_then() -> None:
    from docket_scheduler.elastic_agent import StandbyWake

    standard = window(1, gpus=40)
    # Docket placed the emergency with the chair's standby: 64 − 40 granted − 6 standby = 18, and 6 of the standby,
    # as the window says (`standby_gpus`).
    emergency = window(7, team="team-b", gpus=24, tier="preemptible", start=NOW + timedelta(minutes=5, seconds=30),
                       standby=6)
    early = run([standard, emergency], {})
    assert early.actions == [] and early.standby is None and early.scavenger_gpus == 64 - 40 - 12 - 6
    # Five minutes before it starts (the policy's standby_wake_minutes): woken.
    at = emergency.start - timedelta(minutes=5)
    woke = decide(policy=POLICY, pool="a100", windows=[standard, emergency], measured={}, lent={}, now=at,
                  owner_preempts=lambda w: True)
    [wake] = woke.actions
    assert (wake.kind, wake.window, wake.team, wake.gpus, wake.span_minutes, wake.measured_by) == (
        "standby_wake", 7, "team-b", 6, 5, "plan")
    assert woke.standby == StandbyWake(7, "team-b", 6) and woke.scavenger_gpus == 24
    assert "hold 6 of the cold standby's 6" in wake.reason
    # The next minute changes nothing; when the emergency ends the standby goes back to rest.
    again = decide(policy=POLICY, pool="a100", windows=[standard, emergency], measured={}, lent={},
                   now=at + timedelta(minutes=1), owner_preempts=lambda w: True, standby=woke.standby)
    assert again.actions == [] and again.standby == woke.standby
    ended = decide(policy=POLICY, pool="a100", windows=[standard], measured={}, lent={}, now=at,
                   owner_preempts=lambda w: True, standby=woke.standby)
    [rest] = ended.actions
    assert (rest.kind, rest.gpus, ended.standby, ended.scavenger_gpus) == ("standby_end", 6, None, 6)


def test_preemptible_work_within_the_pool_less_the_standby_wakes_nothing_and_the_standby_is_never_exceeded() -> None:
    standard = window(1, gpus=40)
    fits = run([standard, window(7, team="team-b", gpus=18, tier="preemptible")], {})
    # 18 GPUs placed in the burst reserve and the ungranted 6: the scavenger QOS holds them, the standby sleeps.
    assert fits.actions == [] and fits.scavenger_gpus == 18 and fits.standby is None
    # A window the chair did not let use the standby wakes nothing, however many GPUs it holds: the standby sleeps.
    unlet = run([standard, window(7, team="team-b", gpus=24, tier="preemptible")], {})
    assert unlet.actions == [] and unlet.standby is None and unlet.scavenger_gpus == 18
    # A window that says it holds more than the pool's standby still gets the standby only.
    over = run([standard, window(7, team="team-b", gpus=40, tier="preemptible", standby=40)], {})
    assert [(a.kind, a.gpus) for a in over.actions] == [("standby_wake", 6)] and over.scavenger_gpus == 24


def test_the_burst_reserve_an_emergency_holds_is_not_given_to_a_burst() -> None:
    emergency = window(7, team="team-b", gpus=30, tier="preemptible")
    # 64 − 8 − 12 − 6 = 38 ungranted GPUs hold the 30: the reserve stays whole.
    assert burst([job(31)], windows=[window(), emergency])[0]["team-a-acct"].gpus == 12
    # 44 placed: 6 of them in the reserve, 6 left for the burst.
    bigger = window(7, team="team-b", gpus=44, tier="preemptible")
    assert burst([job(31)], windows=[window(), bigger])[0]["team-a-acct"].gpus == 6
    # 50 placed: the whole reserve is the emergency's, no burst.
    assert burst([job(31)], windows=[window(), window(7, team="team-b", gpus=50, tier="preemptible")]) == ({}, [])


# --- the night opening ----------------------------------------------------------------------------------

BERLIN = AgentPolicy(**{**POLICY.__dict__, "time_zone": "Europe/Berlin"})  # night 22:00–06:00, under 30%, 10 min


def night(now: datetime, *, use: float = 27, opened=None, lent=None, policy=BERLIN, last: float | None = None,
          last_measured: bool = True):
    """A standard 8-GPU window running from two days before `now` to two days after, measured at `use` % each of the
    last ten minutes (the last one at `last` when given): by default above the idle threshold (25%), under the
    night's (30%)."""
    held = DesiredWindow(id=1, plan_version=1, cluster="atlas", pool="a100", gpu_model="A100", scheduler_label="a100",
                         gpu_count=8, gpus_per_node=8, start=now - timedelta(days=2), end=now + timedelta(days=2),
                         team="team-a", account="team-a-acct", tier="standard", request_id=None)
    values = minutes(*([use] * 9 + [(use if last is None else last) if last_measured else None]))
    return decide(policy=policy, pool="a100", windows=[held], measured={1: WindowMinutes(held, values)},
                  lent=lent or {}, now=now, owner_preempts=lambda w: True, opened=opened)


def test_a_quiet_standard_window_opens_for_the_committees_night_and_closes_at_its_end_on_the_long_dst_night() -> None:
    """25 October 2026, Berlin leaves summer time: the night 22:00 CEST – 06:00 CET is nine hours, 20:00–05:00 UTC."""
    assert night(datetime(2026, 10, 24, 19, 59, 30, tzinfo=UTC)).actions == []  # 21:59 CEST: not yet
    opened = night(datetime(2026, 10, 24, 20, 0, 30, tzinfo=UTC))  # 22:00 CEST
    [act] = opened.actions
    assert (act.kind, act.gpus, act.utilization_pct, act.span_minutes) == ("night_open", 5, Decimal(27), 10)
    assert "night (22:00–06:00 Europe/Berlin)" in act.reason
    # 27 % of 8 GPUs busy, 5 opened: preemptible work gets the 38 nobody was granted and them.
    assert dict(opened.opened) == {1: 5} and dict(opened.lent) == {} and opened.scavenger_gpus == 43
    # 05:59 CET (04:59 UTC), the ninth hour: still night, kept.
    kept = night(datetime(2026, 10, 25, 4, 59, 30, tzinfo=UTC), opened={1: 5})
    assert kept.actions == [] and dict(kept.opened) == {1: 5}
    closed = night(datetime(2026, 10, 25, 5, 0, 30, tzinfo=UTC), opened={1: 5})  # 06:00 CET
    [act] = closed.actions
    assert (act.kind, act.gpus) == ("night_close", 5) and "the night ended (06:00 Europe/Berlin)" in act.reason
    assert dict(closed.opened) == {} and closed.scavenger_gpus == 38


def test_the_short_dst_night_and_a_window_that_wakes_up_at_night() -> None:
    """28 March 2027, Berlin enters summer time: 22:00 CET – 06:00 CEST is seven hours, 21:00–04:00 UTC."""
    assert night(datetime(2027, 3, 27, 20, 59, 30, tzinfo=UTC)).actions == []  # 21:59 CET
    assert [a.kind for a in night(datetime(2027, 3, 27, 21, 0, 30, tzinfo=UTC)).actions] == ["night_open"]
    assert night(datetime(2027, 3, 28, 3, 59, 30, tzinfo=UTC), opened={1: 5}).actions == []  # 05:59 CEST
    assert [a.kind for a in night(datetime(2027, 3, 28, 4, 0, 30, tzinfo=UTC), opened={1: 5}).actions] == [
        "night_close"]
    at = datetime(2027, 3, 28, 1, 0, 30, tzinfo=UTC)
    # At night, the owner's use rises to the night threshold: closed; a minute not measured: closed.
    [rose] = night(at, opened={1: 5}, last=30).actions
    assert rose.kind == "night_close" and "rose to 30% (night threshold 30%)" in rose.reason
    [unmeasured] = night(at, opened={1: 5}, last_measured=False).actions
    assert unmeasured.kind == "night_close" and unmeasured.reason == "its last minute was not measured"
    # A window at the night threshold is not opened, nor one already lent as idle.
    assert night(at, use=30).actions == []
    lent = night(at, use=10, lent={1: 7})
    assert lent.actions == [] and dict(lent.opened) == {} and dict(lent.lent) == {1: 7}


def test_a_policy_whose_time_zone_the_agent_does_not_know_is_refused() -> None:
    from docket_scheduler.elastic_agent import AgentError

    body = {"version": 2, "time_zone": "Mars/Olympus", "pools": [],
            "parameters": {"idle_threshold_pct": 25, "idle_span_minutes": 5, "offer_idle_to_preemptible": True}}
    with pytest.raises(AgentError, match="time zone 'Mars/Olympus' is unknown"):
        AgentPolicy.from_api(body)
    assert AgentPolicy.from_api({**body, "time_zone": "Europe/Berlin"}).night_start.hour == 22


# --- Slurm's accounting as the measurement --------------------------------------------------------------

def test_slurm_accounting_measures_a_minute_by_the_gpus_allocated_in_it() -> None:
    from docket_scheduler.elastic_measure import allocated_minutes
    from docket_scheduler.slurm_sacct import JobRun

    start = datetime(2026, 12, 2, 9, 57, tzinfo=UTC)
    runs = [
        # 2 A100s from 09:57:30, still running: half of the first minute, then whole minutes.
        JobRun(1, "Team-A-Acct", start, start + timedelta(seconds=30), None, {"a100": 2}),
        JobRun(2, "team-b-acct", start, start, start + timedelta(minutes=1), {"h100": 4}),  # another pool's GPUs
        JobRun(3, "team-b-acct", start, None, None, {"a100": 8}),  # never started
    ]
    found = allocated_minutes(runs, gpu_types={"a100"}, start=start, end=start + timedelta(minutes=3))
    assert found == {"team-a-acct": minutes(100, 200, 200)}
    # An untyped job counts where the pool takes untyped GPUs (a cluster with one pool).
    untyped = [JobRun(4, "team-a-acct", start, start, None, {"": 1})]
    assert allocated_minutes(untyped, gpu_types={"a100"}, start=start, end=start + timedelta(minutes=1)) == {}
    assert allocated_minutes(untyped, gpu_types={"a100", ""}, start=start, end=start + timedelta(minutes=1)) == {
        "team-a-acct": minutes(100)}

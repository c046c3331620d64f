"""The policy lab's demo rows, added when seed_demo has filled the committee's (committee.signals.demo_seeded).

Two open proposals for the same week, so the chair can adopt the first and see the second refused for that week:
"A100 burst reserve 20 % → 15 %" (from the demo's pool and its value today) with a staging benchmark, two comments
and two votes, and a quorum change.
"""

from __future__ import annotations

from datetime import datetime

from django.contrib.auth import get_user_model

from allocations.models import Team
from policy import parameters, services
from policy.models import Proposal


def seed_policy_lab(*, now: datetime) -> list[Proposal]:
    """Idempotent: nothing is added when the board already has proposals."""
    if Proposal.objects.exists():
        return []
    users = get_user_model().objects
    current = parameters.current_values()
    key = next(iter(k for k in current if k.startswith("pool.") and k.endswith("a100.burst_reserve_pct")), None)
    if key is None:
        return []
    reserve = int(current[key])
    proposed = max(reserve - 5, 0)
    search_lead = users.get(username="search-lead")
    burst = services.proposal_submit(
        actor=search_lead,
        title=f"A100 burst reserve {reserve}% → {proposed}%",
        reason="The A100 burst reserve sat idle most nights in the last four weeks while standard "
               "requests were shortened; five points fewer held back gives about three more GPUs to standard "
               "windows every week.",
        expected_effect="About 3 more A100s in standard windows each week; preemptible bursts wait a little longer "
                        "at peaks (p99 queue wait +10 min at most).",
        changes={key: str(proposed)},
        figures=[
            {"metric": "throughput", "label": "BERT-large fine-tune on 16 A100, staging", "baseline": "1180",
             "value": "1265", "unit": "samples/s"},
            {"metric": "latency_jitter", "label": "Inference p99 jitter during a burst", "baseline": "42",
             "value": "47", "unit": "ms"},
            {"metric": "cost", "label": "Idle reserve GPU-hours paid for", "baseline": "2150", "value": "1610",
             "unit": "USD per week"},
        ],
    )
    services.proposal_comment(actor=users.get(username="ads-lead"), proposal=burst, team=Team.objects.get(slug="ads"),
                              body="Our preemptible bursts use the reserve on Tuesday mornings; 15% still covers "
                                   "them in the staging run, but please watch the p99 queue wait.")
    services.proposal_comment(actor=users.get(username="finance"), proposal=burst,
                              body="The idle reserve is the largest line of unused A100 cost this quarter.")
    services.proposal_vote(actor=users.get(username="finance"), proposal=burst, choice="support",
                           comment="Saves idle cost without losing the burst.", now=now)
    services.proposal_vote(actor=users.get(username="ads-lead"), proposal=burst, choice="against",
                           team=Team.objects.get(slug="ads"), comment="We would rather keep 20% until the "
                           "queue-wait alert is in place.", now=now)
    quorum = int(current[parameters.QUORUM])
    second = services.proposal_submit(
        actor=users.get(username="product"),
        title=f"Score quorum {quorum} → {quorum + 1} member scores",
        reason="With four seats, two scores let one absent member's view decide a close ranking.",
        expected_effect="Fewer requests ranked on two scores only; a few more automatic deferrals in weeks with "
                        "absences.",
        changes={parameters.QUORUM: str(quorum + 1)},
    )
    return [burst, second]

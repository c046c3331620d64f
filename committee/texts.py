"""The texts the committee's services write into the database, as codes rendered in the reader's language.

Each renderer takes the parameters `core.texts.stored_text` kept and returns the text with gettext, so a
plan's note or a line of a request's history reads in the language of whoever opens the page, not of the
person whose click wrote it. What a person typed (a justification, a note) is a parameter, shown as typed.
Imported by CommitteeConfig.ready, which registers them.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from allocations.explanations import explanation_text, tier_label
from committee.models import DecisionOutcome, PostHocOutcome
from core.datetimes import format_when
from core.numbers import format_figure, format_gpu_hours, format_money, format_pct
from core.texts import text_renderer


def names_text(names: list[str]) -> str:
    """ "Ada and Bo", in the reader's language."""
    return _(" and ").join(names)


def standby_text(count: int) -> str:
    """ " (6 from the cold standby)", or "" for none."""
    return _(" (%(count)d from the cold standby)") % {"count": count} if count else ""


def outcome_label(outcome: str, granted_gpu_count: int | None) -> str:
    """"Grant", "Partial grant (8 GPUs)": a decision's outcome in a request event or a record line."""
    label = str(DecisionOutcome(outcome).label) if outcome in DecisionOutcome.values else outcome
    if outcome in (DecisionOutcome.PARTIAL, DecisionOutcome.ALTERNATIVE) and granted_gpu_count:
        return _("%(label)s (%(n)d GPUs)") % {"label": label, "n": granted_gpu_count}
    return label


@text_renderer("decision_corrected")
def decision_corrected(params: Mapping[str, Any]) -> str:
    """A request's history: a published decision corrected, from what to what, and the chair's reason as typed."""
    return _("%(old)s → %(new)s: %(reason)s") % {
        "old": outcome_label(params["previous_outcome"], params["previous_granted_gpu_count"]),
        "new": outcome_label(params["outcome"], params["granted_gpu_count"]),
        "reason": params["reason"],
    }


@text_renderer("run_explained")
def run_explained(params: Mapping[str, Any]) -> str:
    """A request's history: the team's reason why its run used less than the threshold, for the next week's
    continuation (docs/multi-week-runs.md), as typed."""
    return _("Week %(week)s of the run: %(reason)s") % {"week": params["week"], "reason": params["reason"]}


@text_renderer("run_week")
def run_week(params: Mapping[str, Any]) -> str:
    """A request's history: the week of the run the committee continued or released."""
    return _("Week %(week)s of the run") % {"week": params["week"]}


@text_renderer("run_extension")
def run_extension(params: Mapping[str, Any]) -> str:
    """A request's history: a run's extension by more weeks, into which week, and the lead's reason as typed."""
    return ngettext(
        "%(weeks)d more week from week %(week)s, request #%(ref)s: %(reason)s",
        "%(weeks)d more weeks from week %(week)s, request #%(ref)s: %(reason)s",
        params["weeks"],
    ) % {"weeks": params["weeks"], "week": params["week"], "ref": params["ref"], "reason": params["reason"]}


@text_renderer("emergency_placed")
def emergency_placed(params: Mapping[str, Any]) -> str:
    """A plan's note: the emergency it was published for."""
    return _("Emergency “%(title)s” of %(team)s, approved by %(names)s: %(gpus)d GPUs%(standby)s, %(tier)s.") % {
        "title": params["title"], "team": params["team"], "names": names_text(params["approvers"]),
        "gpus": int(params["gpu_count"]), "standby": standby_text(int(params["standby_gpu_count"])),
        "tier": tier_label(params["tier"]),
    }


@text_renderer("emergency_published")
def emergency_published(params: Mapping[str, Any]) -> str:
    """A request's history: the plan version that placed the emergency, and where."""
    return _("plan version %(version)d: %(text)s%(standby)s") % {
        "version": int(params["version"]),
        "text": explanation_text(params["reasons"], week_start=datetime.fromisoformat(params["week_start"])),
        "standby": standby_text(int(params["standby_gpu_count"])),
    }


@text_renderer("emergency_approved")
def emergency_approved(params: Mapping[str, Any]) -> str:
    """An emergency's decision: who approved it, and the team's justification as typed."""
    return _("Emergency, approved by %(names)s: %(justification)s") % {
        "names": names_text(params["approvers"]), "justification": params["justification"],
    }


@text_renderer("emergency_rejected")
def emergency_rejected(params: Mapping[str, Any]) -> str:
    """An emergency's decision: who rejected it, and their note as typed."""
    return _("Emergency request rejected by %(name)s: %(note)s") % {"name": params["name"], "note": params["note"]}


@text_renderer("emergency_reviewed")
def emergency_reviewed(params: Mapping[str, Any]) -> str:
    """A request's history: the weekly review's decision on an emergency, with its note as typed."""
    label = str(PostHocOutcome(params["outcome"]).label)
    return _("%(outcome)s: %(note)s") % {"outcome": label, "note": params["note"]} if params.get("note") else label


@text_renderer("request_carried")
def request_carried(params: Mapping[str, Any]) -> str:
    """A request's history: the deferred request of an earlier week it was carried from."""
    return _("carried from week %(week)s") % {"week": params["week"]}


@text_renderer("request_decided")
def request_decided(params: Mapping[str, Any]) -> str:
    """A request's history at finalize: the outcome, and for an alternative what it is (its description as typed)."""
    label = outcome_label(params["outcome"], params["granted_gpu_count"])
    if not params.get("alternative"):
        return label
    hours = params.get("alternative_gpu_hours")
    if hours is None:
        return _("%(outcome)s: %(alternative)s") % {"outcome": label, "alternative": params["alternative"]}
    return _("%(outcome)s: %(alternative)s (%(hours)s GPU-hours)") % {
        "outcome": label, "alternative": params["alternative"], "hours": format_gpu_hours(Decimal(hours)),
    }


@text_renderer("request_placed")
def request_placed(params: Mapping[str, Any]) -> str:
    """A request's history at publish: the plan version, and what the engine did with the request."""
    return _("plan version %(version)d: %(text)s") % {
        "version": int(params["version"]),
        "text": explanation_text(params["reasons"], week_start=datetime.fromisoformat(params["week_start"])),
    }


def _release_text(params: Mapping[str, Any]) -> str:
    start = format_when(datetime.fromisoformat(str(params["start"])))
    if params["kept"] == 0:
        return _("every GPU of it from %(start)s") % {"start": start}
    return ngettext(
        "%(released)d GPU from %(start)s, keeping %(kept)d", "%(released)d GPUs from %(start)s, keeping %(kept)d",
        params["released"],
    ) % {"released": params["released"], "start": start, "kept": params["kept"]}


@text_renderer("window_released")
def window_released(params: Mapping[str, Any]) -> str:
    """A request's history: its team gave GPUs of its window back, with the lead's reason as typed."""
    text = _("Gave back %(what)s.") % {"what": _release_text(params)}
    return f"{text} {params['reason']}" if params.get("reason") else text


@text_renderer("plan_released")
def plan_released(params: Mapping[str, Any]) -> str:
    """A plan's note: the release it was published for, with the lead's reason as typed."""
    text = _("%(team)s gave back GPUs of “%(title)s”: %(what)s; the waitlist placed again") % {
        "team": params["team"], "title": params["title"], "what": _release_text(params),
    }
    return f"{text}: {params['reason']}" if params.get("reason") else text


@text_renderer("plan_corrected")
def plan_corrected(params: Mapping[str, Any]) -> str:
    """A plan's note: the correction it was published for, with the chair's reason as typed."""
    return _("correction of “%(title)s” (%(team)s): %(reason)s") % {
        "title": params["title"], "team": params["team"], "reason": params["reason"],
    }


@text_renderer("outcome_reported")
def outcome_reported(params: Mapping[str, Any]) -> str:
    """A request's history: the realized outcome the team reported (or corrected, from what), and its note as typed."""
    words = {"value": format_figure(Decimal(params["value"])), "unit": params["unit"], "note": params["note"]}
    if params.get("previous") is not None:
        return _("%(previous)s → %(value)s %(unit)s: %(note)s") % {
            **words, "previous": format_figure(Decimal(params["previous"]))}
    return _("%(value)s %(unit)s: %(note)s") % words


# The fast lane (committee/services/fastlane.py, docs/fast-lane.md): why a request was refused it, in plain words.


@text_renderer("fast_lane_over_ceiling")
def fast_lane_over_ceiling(params: Mapping[str, Any]) -> str:
    """A fast-lane refusal: more GPU-hours than the ceiling."""
    return _("Above the fast lane's ceiling: %(gpus)d GPUs × %(hours)d h = %(gpu_hours)s GPU-hours, more than the "
             "%(ceiling)s GPU-hours a fast-lane request may ask for. It goes to the weekly review.") % {
        "gpus": int(params["gpus"]), "hours": int(params["hours"]),
        "gpu_hours": format_gpu_hours(int(params["gpu_hours"])), "ceiling": format_gpu_hours(int(params["ceiling"])),
    }


@text_renderer("fast_lane_over_budget")
def fast_lane_over_budget(params: Mapping[str, Any]) -> str:
    """A fast-lane refusal: the department's budget has no room for the charge."""
    return _("Over budget: it would charge %(department)s %(charge)s, and %(left)s is left of its budget for "
             "%(quarter)s. It goes to the weekly review.") % {
        "department": params["department"], "charge": format_money(Decimal(params["charge"])),
        "left": format_money(Decimal(params["left"])), "quarter": params["quarter"],
    }


@text_renderer("fast_lane_over_fair_share")
def fast_lane_over_fair_share(params: Mapping[str, Any]) -> str:
    """A fast-lane refusal: the team used more than its fair share lately."""
    return _("Above its fair share: %(team)s used %(used)s of the recent GPU-hours, more than its share of "
             "%(entitled)s. It goes to the weekly review.") % {
        "team": params["team"], "used": format_pct(params["used_pct"]), "entitled": format_pct(params["entitled_pct"]),
    }


@text_renderer("fast_lane_no_room")
def fast_lane_no_room(params: Mapping[str, Any]) -> str:
    """A fast-lane refusal: the pool's fast-lane reserve has no room for the whole duration."""
    if not int(params["reserve"]):
        return _("No fast lane on %(pool)s: the policy holds no fast-lane reserve on this pool. It goes to the "
                 "weekly review.") % {"pool": params["pool"]}
    return _("No room in the fast lane: %(pool)s's fast-lane reserve of %(reserve)d GPUs has at most %(free)d free "
             "for %(hours)d h before the week ends, fewer than the %(gpus)d asked. It goes to the weekly review.") % {
        "pool": params["pool"], "reserve": int(params["reserve"]), "free": int(params["free"]),
        "hours": int(params["hours"]), "gpus": int(params["gpus"]),
    }


@text_renderer("fast_lane_placed")
def fast_lane_placed(params: Mapping[str, Any]) -> str:
    """A plan's note: the fast-lane grant it was published for."""
    return _("Fast lane: “%(title)s” of %(team)s, %(gpus)d GPUs for %(hours)d h, granted on submission.") % {
        "title": params["title"], "team": params["team"], "gpus": int(params["gpu_count"]),
        "hours": int(params["hours"]),
    }


@text_renderer("fast_lane_granted")
def fast_lane_granted(params: Mapping[str, Any]) -> str:
    """A fast-lane grant's decision: who decided (the policy), and why."""
    return _("Granted in the fast lane: %(gpu_hours)s GPU-hours, within the ceiling, the department's budget and "
             "the team's fair share, placed in the pool's fast-lane reserve.") % {
        "gpu_hours": format_gpu_hours(int(params["gpu_hours"]))}


@text_renderer("fast_lane_published")
def fast_lane_published(params: Mapping[str, Any]) -> str:
    """A request's history: the plan version that placed the fast-lane grant, and where."""
    return _("plan version %(version)d: %(text)s") % {
        "version": int(params["version"]),
        "text": explanation_text(params["reasons"], week_start=datetime.fromisoformat(params["week_start"])),
    }


@text_renderer("fast_lane_moved")
def fast_lane_moved(params: Mapping[str, Any]) -> str:
    """A request's history: refused the fast lane, it goes to the next weekly review."""
    return _("moved to the intake of week %(week)s as a draft, for the weekly review") % {"week": params["week"]}


@text_renderer("fast_lane_not_moved")
def fast_lane_not_moved(params: Mapping[str, Any]) -> str:
    """A request's history: refused the fast lane, and no weekly review could take it."""
    if params.get("taken"):
        return _("withdrawn: the team already has a request for this pool at the next weekly review; add to it there")
    return _("withdrawn: no weekly review is open for requests; file it when the next intake opens")


@text_renderer("fast_lane_revoked")
def fast_lane_revoked(params: Mapping[str, Any]) -> str:
    """A plan's note and a request's history: the review revoked a fast-lane grant before it started."""
    return _("Fast-lane grant “%(title)s” of %(team)s revoked by the review: %(reason)s") % {
        "title": params["title"], "team": params["team"], "reason": params["reason"]}

"""The engine's reasons in words: one renderer for every page, command and record.

The engine (allocations/engine.py) explains a demand with reason codes and plain parameters;
this module turns them into text in the active language, with gettext. In English it reads
as the engine's explanations always have (docs/engine.md has the table):

    placed Wed 00:00–Thu 00:00 on 8 A100; queued: a100 pool full from Mon 00:00 to Wed 00:00

Times read as the weekday and UTC time of the plan's week ("Tue 08:00", "next Mon 00:00",
"Mon 00:00 (+2 weeks)"); instants outside it, in a refusal, as dates ("2023-12-29 00:00").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

from django.utils.dates import WEEKDAYS_ABBR
from django.utils.translation import get_language, ngettext
from django.utils.translation import gettext as _

from allocations.engine import Reason

__all__ = ["REASON_CODES", "explanation_text", "placement_text", "reasons_as_json", "tier_label"]

_WEEK = timedelta(days=7)
_DASH = "\u2013"  # the en dash of "Tue 08:00–Thu 08:00" spans

# Codes that say why a demand was not placed; an explanation holds one of them, alone.
_REFUSALS = frozenset(
    {
        "unknown_pool",
        "minimum_above_count",
        "outside_week",
        "window_too_short",
        "window_without_whole_hour",
        "pool_too_small",
        "pool_full",
    }
)

# Every code an explanation can hold (docs/engine.md has their parameters), in reading order.
REASON_CODES = ("shortened", "placed", "queued", "moved", "pool_chosen", "kept", "released", *sorted(_REFUSALS))


def reasons_as_json(reasons: Iterable[Reason]) -> list[dict[str, Any]]:
    """Reasons as stored (``PlanExplanation.reasons``): ``[{"code": ..., "params": {...}}]``."""
    return [{"code": reason.code, "params": dict(reason.params)} for reason in reasons]


def tier_label(tier: str) -> str:
    """A window's tier in words: "priority", "standard", "preemptible"."""
    labels = {"priority": _("priority"), "standard": _("standard"), "preemptible": _("preemptible")}
    try:
        return labels[tier]
    except KeyError:
        raise ValueError(f"unknown tier {tier!r}") from None


def placement_text(
    *, gpu_count: int, gpu_model: str, start: datetime, end: datetime, tier: str, week_start: datetime
) -> str:
    """One window as every surface names a placement: "16 A100, Wed 12:00–Fri 04:00, standard".

    Times read as weekday labels of the week starting at ``week_start`` (UTC), as in explanations.
    """
    week = _Labels(week_start)
    return _("%(gpus)s, %(span)s, %(tier)s") % {
        "gpus": _model_gpus(gpu_count, gpu_model),
        "span": f"{week.label(start)}{_DASH}{week.label(end)}",
        "tier": tier_label(tier),
    }


def explanation_text(reasons: Iterable[Reason | Mapping[str, Any]], *, week_start: datetime) -> str:
    """An explanation's reasons (engine ``Reason``s or their stored JSON) as one text.

    ``week_start`` is the start of the plan's week, which the weekday labels count from.
    Raises ``ValueError`` for a code this renderer does not know.
    """
    week = _Labels(week_start)
    parts = []
    for reason in reasons:
        if isinstance(reason, Reason):
            code, params = reason.code, reason.params
        else:
            code, params = reason["code"], reason["params"]
        text = _render(code, params, week)
        parts.append(_("not placed: %(reason)s") % {"reason": text} if code in _REFUSALS else text)
    return "; ".join(parts)


class _Labels:
    """Instants as weekday labels of one week, in UTC."""

    def __init__(self, week_start: datetime) -> None:
        self.start = week_start.astimezone(UTC)

    def at(self, param: str) -> str:
        return self.label(_instant(param))

    def label(self, instant: datetime) -> str:
        instant = instant.astimezone(UTC)
        return _label(instant.weekday(), f"{instant:%H:%M}", (instant - self.start) // _WEEK, get_language())

    def span(self, start: str, end: str) -> str:
        return f"{self.at(start)}{_DASH}{self.at(end)}"


@lru_cache(maxsize=4096)
def _label(weekday: int, time: str, weeks: int, language: str | None) -> str:
    """ "Tue 08:00", "next Mon 00:00", "Mon 00:00 (+2 weeks)" in `language` (the active one: part of the key, so a
    week of explanations asks gettext once an hour of the week, not four times a demand)."""
    text = _("%(weekday)s %(time)s") % {"weekday": WEEKDAYS_ABBR[weekday], "time": time}
    if weeks == 1:
        return _("next %(label)s") % {"label": text}
    if weeks > 1:
        return ngettext("%(label)s (+%(weeks)d week)", "%(label)s (+%(weeks)d weeks)", weeks) % {
            "label": text,
            "weeks": weeks,
        }
    return text


def _instant(param: str) -> datetime:
    return datetime.fromisoformat(param).astimezone(UTC)


def _date_span(start: str, end: str) -> str:
    """Two instants as dates and UTC times: "2023-12-29 00:00–2023-12-31 00:00 UTC"."""
    return _("%(start)s%(dash)s%(end)s UTC") % {
        "start": f"{_instant(start):%Y-%m-%d %H:%M}",
        "dash": _DASH,
        "end": f"{_instant(end):%Y-%m-%d %H:%M}",
    }


def _gpus(count: int) -> str:
    """ "1 GPU", "3 GPUs"."""
    return ngettext("%(count)d GPU", "%(count)d GPUs", count) % {"count": count}


def _model_gpus(count: int, model: str) -> str:
    """GPUs with their model ("16 A100"), or "1 GPU" / "16 GPUs" when the pool names none."""
    return _("%(count)d %(model)s") % {"count": count, "model": model} if model else _gpus(count)


def _pool_chosen(p: Mapping[str, Any]) -> str:
    """Where a request that named several pools went, and why not on the pools it named before."""
    tried = p["tried"]
    if not any(t["gpu_count"] for t in tried):
        return _("no room on its other pools either: %(pools)s") % {
            "pools": ", ".join(t["pool"] for t in tried[1:])
        }
    if tried[0]["pool"] == p["pool"]:
        return _("on %(pool)s, the first of its pools") % {"pool": p["pool"]}
    before = []
    for t in tried:
        if t["pool"] == p["pool"]:
            break
        if t["gpu_count"] == 0:
            before.append(_("%(pool)s was full") % {"pool": t["pool"]})
        else:
            before.append(_("%(pool)s could give only %(got)d of %(asked)d GPUs") % {
                "pool": t["pool"], "got": t["gpu_count"], "asked": t["asked"]})
    return _("placed on %(pool)s: %(why)s") % {"pool": p["pool"], "why": ", ".join(before)}


def _render(code: str, p: Mapping[str, Any], week: _Labels) -> str:
    if code == "placed":
        if p["preemptible"]:
            text = _("placed %(span)s on %(gpus)s, preemptible (in the burst reserve)")
        elif p.get("fast_lane"):
            text = _("placed %(span)s on %(gpus)s in the fast-lane reserve, granted on submission")
        else:
            text = _("placed %(span)s on %(gpus)s")
        return text % {"span": week.span(p["start"], p["end"]), "gpus": _model_gpus(p["gpu_count"], p["gpu_model"])}
    if code == "queued":
        return _("queued: %(pool)s pool full from %(start)s to %(end)s") % {
            "pool": p["pool"],
            "start": week.at(p["full_from"]),
            "end": week.at(p["full_to"]),
        }
    if code == "moved":
        return _("moved later so that lower-ranked requests fit too: it could have started %(start)s") % {
            "start": week.at(p["could_start"]),
        }
    if code == "shortened":
        return _("shortened to %(gpus)s: only %(count)d free for %(hours)d h between %(start)s and %(end)s") % {
            "gpus": _gpus(p["gpu_count"]),
            "count": p["gpu_count"],
            "hours": p["duration_hours"],
            "start": week.at(p["earliest_start"]),
            "end": week.at(p["latest_end"]),
        }
    if code == "kept":
        if p.get("fast_lane") and not p.get("started", True):
            return ngettext(
                "kept as published: a fast-lane grant, from %(start)s on %(count)d GPU",
                "kept as published: a fast-lane grant, from %(start)s on %(count)d GPUs",
                p["gpu_count"],
            ) % {"start": week.at(p["start"]), "count": p["gpu_count"]}
        if p.get("started", True):  # records from before the flag kept started windows only
            return ngettext(
                "kept as published: running since %(start)s on %(count)d GPU",
                "kept as published: running since %(start)s on %(count)d GPUs",
                p["gpu_count"],
            ) % {"start": week.at(p["start"]), "count": p["gpu_count"]}
        if p.get("left"):
            return ngettext(
                "kept as published: from %(start)s on %(count)d GPU (the correction left other teams' windows in "
                "place)",
                "kept as published: from %(start)s on %(count)d GPUs (the correction left other teams' windows in "
                "place)",
                p["gpu_count"],
            ) % {"start": week.at(p["start"]), "count": p["gpu_count"]}
        return ngettext(
            "kept as published: an approved emergency, from %(start)s on %(count)d GPU",
            "kept as published: an approved emergency, from %(start)s on %(count)d GPUs",
            p["gpu_count"],
        ) % {"start": week.at(p["start"]), "count": p["gpu_count"]}
    if code == "released":
        if p["gpu_count"] == 0:
            return _("given back by the team from %(start)s: every GPU of its window") % {"start": week.at(p["start"])}
        return ngettext(
            "given back by the team from %(start)s: %(released)d GPU, keeping %(count)d",
            "given back by the team from %(start)s: %(released)d GPUs, keeping %(count)d",
            p["released"],
        ) % {"start": week.at(p["start"]), "released": p["released"], "count": p["gpu_count"]}
    if code == "pool_chosen":
        return _pool_chosen(p)
    if code == "revoked":
        return _("revoked by the review before it started: %(reason)s") % {"reason": p["reason"]}
    if code == "unknown_pool":
        return _("unknown pool %(pool)s") % {"pool": repr(p["pool"])}
    if code == "minimum_above_count":
        return ngettext(
            "minimum %(minimum)d GPU is more than the %(count)d asked",
            "minimum %(minimum)d GPUs is more than the %(count)d asked",
            p["min_gpu_count"],
        ) % {"minimum": p["min_gpu_count"], "count": p["gpu_count"]}
    if code == "outside_week":
        return _("its window %(window)s lies outside the week %(week)s") % {
            "window": _date_span(p["earliest_start"], p["latest_end"]),
            "week": _date_span(p["week_start"], p["week_end"]),
        }
    if code == "window_too_short":
        return _("its window %(span)s cannot hold %(hours)d h") % {
            "span": week.span(p["start"], p["end"]),
            "hours": p["duration_hours"],
        }
    if code == "window_without_whole_hour":
        return _("its window %(window)s holds no whole hour, so cannot hold %(hours)d h") % {
            "window": _date_span(p["earliest_start"], p["latest_end"]),
            "hours": p["duration_hours"],
        }
    if code == "pool_too_small":
        if p["capacity"] == "total":
            text = _("needs at least %(gpus)s, the %(pool)s pool has %(count)d including the burst reserve")
        else:
            text = _("needs at least %(gpus)s, the %(pool)s pool has %(count)d for standard windows")
        text %= {"gpus": _gpus(p["min_gpu_count"]), "pool": p["pool"], "count": p["available_gpus"]}
        return "; ".join([text, _("no fit this week")])
    if code == "pool_full":
        text = _("%(pool)s pool full from %(start)s to %(end)s (needs %(gpus)s for %(hours)d h by %(by)s)") % {
            "pool": p["pool"],
            "start": week.at(p["full_from"]),
            "end": week.at(p["full_to"]),
            "gpus": _gpus(p["min_gpu_count"]),
            "hours": p["duration_hours"],
            "by": week.at(p["latest_end"]),
        }
        fit = p["next_fit"]
        if fit is None:
            later = _("no fit this week")
        else:
            later = _("next fit would be %(span)s on %(gpus)s") % {
                "span": week.span(fit["start"], fit["end"]),
                "gpus": _model_gpus(fit["gpu_count"], fit["gpu_model"]),
            }
        return "; ".join([text, later])
    raise ValueError(f"unknown reason code {code!r}")

"""Commitments: the later weeks of a run over several weeks (docs/multi-week-runs.md).

A run's first week is a window of that week's plan; each later week it spans is a `Commitment`, written when the
first week's plan places the run: the same pool, team and GPUs, over the whole of that week (Monday 00:00 to the next
Monday 00:00 in the committee's zone), so the run continues without a gap across each week boundary. That week's
engine run places it before the week's new requests (`allocations.commitments`). This app knows the run only by its
request's id (`request_ref`, as a window does).
"""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext_lazy as _

from allocations.models.plans import AllocationWindow
from allocations.models.resources import GpuPool, Team


class CommitmentState(models.TextChoices):
    # Promised by the run's first week; placed first in its week until settled.
    COMMITTED = "committed", _("committed")
    # The run's measured use in the week before reached the policy's threshold, the team explained why not, or the
    # committee confirmed it: placed first in its week.
    CONFIRMED = "confirmed", _("confirmed")
    # The evidence did not reach the threshold and the team gave no reason: the committee decides at the week's
    # review; not placed until it confirms.
    WITHHELD = "withheld", _("withheld")
    # No longer held: the first week's plan does not place the run any more, or the committee let it go.
    RELEASED = "released", _("released")


# The states a week's engine run places before its new requests.
PLACED_STATES = (CommitmentState.COMMITTED, CommitmentState.CONFIRMED)


class Commitment(models.Model):
    request_ref = models.PositiveBigIntegerField(_("request"))
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="commitments", verbose_name=_("team"))
    pool = models.ForeignKey(GpuPool, on_delete=models.PROTECT, related_name="commitments", verbose_name=_("pool"))
    week = models.CharField(_("ISO week"), max_length=8)
    week_number = models.PositiveSmallIntegerField(_("week of the run"))  # 2 for the run's second week
    run_weeks = models.PositiveSmallIntegerField(_("weeks of the run"))
    gpu_count = models.PositiveIntegerField(_("GPUs"))
    # The run's place in its first week's priority order: commitments of runs that began in the same week keep it
    # among themselves (allocations.commitments.commitment_order).
    position = models.PositiveIntegerField(_("priority position in its first week"))
    start = models.DateTimeField(_("start"))
    end = models.DateTimeField(_("end"))
    state = models.CharField(_("state"), max_length=10, choices=CommitmentState.choices,
                             default=CommitmentState.COMMITTED)
    # The window of the run's first week that the commitment continues.
    first_window = models.ForeignKey(
        AllocationWindow, on_delete=models.PROTECT, related_name="commitments", verbose_name=_("first window")
    )
    # The evidence the state was settled on (allocations.services.commitment_settle): the run's measured utilization
    # in the week before and the threshold in force; the team's reason for a shortfall, as typed; who settled it.
    utilization_pct = models.DecimalField(_("measured utilization %"), max_digits=5, decimal_places=1, null=True,
                                          blank=True)
    threshold_pct = models.PositiveSmallIntegerField(_("threshold %"), null=True, blank=True)
    team_reason = models.TextField(_("the team's reason"), blank=True, max_length=2000)
    settled_by_name = models.CharField(_("settled by"), max_length=150, blank=True)
    settled_at = models.DateTimeField(_("settled"), null=True, blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        ordering = ["week", "id"]
        verbose_name = _("commitment")
        verbose_name_plural = _("commitments")
        constraints = [
            models.UniqueConstraint(fields=["request_ref", "week"], name="commitment_one_per_run_week"),
            models.CheckConstraint(condition=Q(end__gt=F("start")), name="commitment_end_after_start"),
            models.CheckConstraint(condition=Q(gpu_count__gt=0), name="commitment_gpu_count_positive"),
            models.CheckConstraint(
                condition=Q(week_number__gte=2, week_number__lte=F("run_weeks")), name="commitment_week_within_run"
            ),
            models.CheckConstraint(
                condition=Q(state__in=[choice.value for choice in CommitmentState]), name="commitment_state_valid"
            ),
        ]
        indexes = [
            # A week's engine run and its review: the commitments of one week.
            models.Index(fields=["week", "state"], name="commitment_week_state_idx"),
            # The request page and the first week's publish: the commitments of one run.
            models.Index(fields=["request_ref"], name="commitment_request_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.team} {self.gpu_count}× {self.pool_id} {self.week} ({self.state})"

    @property
    def gpu_hours(self) -> int:
        return self.gpu_count * int((self.end - self.start).total_seconds() // 3600)

    @property
    def continued_by_committee(self) -> bool:
        """Confirmed though its evidence fell short (under the threshold, or nothing measured) and the team gave no
        reason: only the committee's decision at the review confirms such a week."""
        return (self.state == CommitmentState.CONFIRMED and self.settled_at is not None and not self.team_reason
                and self.threshold_pct is not None
                and (self.utilization_pct is None or self.utilization_pct < self.threshold_pct))

"""What the weekly clock has done: one row per job and period (committee/calendar.py)."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class ClockRun(models.Model):
    """A run of one of the clock's jobs for one period, written in the same transaction as the job's effect.

    `period` is what the run stands for: the cycle's week (close intake, open the next week), the ISO
    week of the slot (weekly reminders), the committee-time day (digests) or the UTC hour (hourly jobs).
    The job `tick` has one row, period "", updated by every tick: when the clock last ran.
    """

    TICK = "tick"

    job = models.CharField(_("job"), max_length=40)
    period = models.CharField(_("period"), max_length=40, blank=True)
    due_at = models.DateTimeField(_("due"))
    ran_at = models.DateTimeField(_("ran"))
    result = models.CharField(_("result"), max_length=500, blank=True)

    class Meta:
        ordering = ["-ran_at"]
        verbose_name = _("clock run")
        verbose_name_plural = _("clock runs")
        constraints = [
            # A period's run exists once: two ticks at once cannot both record (and do) it.
            models.UniqueConstraint(fields=["job", "period"], name="clockrun_once_per_job_period"),
        ]
        indexes = [
            # The clock page and /readyz: each job's last run (committee.selectors.clock_status).
            models.Index(fields=["job", "-ran_at"], name="clockrun_last_run_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.job} {self.period}"

"""A granted request's realized outcome, reported by its team against the request's impact forecast (docs/outcomes.md).

The clock asks for it once, when the grant's last window has ended (`committee.services.realized.outcome_asks_due`):
that writes the row, with the instant the last window ended and the day it falls due (that end plus the policy's
`outcomes.grace_days`). The team then reports the value, in the forecast's own unit, with a note; a correction by the
team replaces the value and note here and is kept, with the value it replaced, in the request's history
(`RequestEvent`, "outcome corrected").
"""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext_lazy as _

from allocations.models import Team
from committee import limits
from committee.limits import bounded_text
from committee.models.requests import GpuRequest


class RealizedOutcome(models.Model):
    request = models.OneToOneField(GpuRequest, on_delete=models.CASCADE, related_name="realized_outcome",
                                   verbose_name=_("request"))
    # The request's team, copied: a team's track record reads its outcomes without the requests.
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="realized_outcomes", verbose_name=_("team"))
    last_window_end = models.DateTimeField(_("last window ended"))
    due_at = models.DateTimeField(_("due"))
    asked_at = models.DateTimeField(_("asked"))
    value = models.DecimalField(_("realized value"), max_digits=14, decimal_places=2, null=True, blank=True,
                                validators=[MinValueValidator(0)])
    note = bounded_text(_("note"), max_length=limits.OUTCOME_NOTE_MAX_LENGTH, blank=True)
    reported_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                    related_name="+", verbose_name=_("reported by"))
    reported_by_name = models.CharField(_("reported by"), max_length=150, blank=True)
    reported_at = models.DateTimeField(_("reported"), null=True, blank=True)

    class Meta:
        ordering = ["-last_window_end", "-id"]
        verbose_name = _("realized outcome")
        verbose_name_plural = _("realized outcomes")
        constraints = [
            models.CheckConstraint(condition=Q(value__isnull=True) | Q(value__gte=0),
                                   name="outcome_value_not_negative"),
            models.CheckConstraint(
                condition=Q(value__isnull=True, reported_at__isnull=True)
                | Q(value__isnull=False, reported_at__isnull=False),
                name="outcome_reported_with_value",
            ),
            models.CheckConstraint(condition=Q(due_at__gte=F("last_window_end")), name="outcome_due_after_end"),
        ]
        indexes = [
            # A team's track record: its latest outcomes, and those not reported by their due day.
            models.Index(fields=["team", "-last_window_end"], name="outcome_team_end_idx"),
        ]

    def __str__(self) -> str:
        return f"outcome of {self.request_id}"

    @property
    def reported(self) -> bool:
        return self.reported_at is not None

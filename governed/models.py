"""The store: a change (who, when, why, from which ISO week) and the values it sets.

Version 1 has no effective week: it holds since always, written by a data migration from the settings and the old
mechanisms. Every later change takes effect from the Monday of its week. At most one substantive change takes effect
per week; a change that is exempt from that rule (a correction that changes no number, a value carried into the
store) states why, and the database holds the rule whichever code path writes.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class ChangeSource(models.TextChoices):
    MIGRATION = "migration", _("Carried over from an earlier version")
    LAB = "lab", _("Policy lab")
    RUBRIC = "rubric", _("Rubric page")
    ELASTIC = "elastic", _("Elastic policy page")
    ADMIN = "admin", _("Admin")
    COMMAND = "command", _("Management command")
    BUDGETS = "budgets", _("Budgets page")


class PolicyChange(models.Model):
    number = models.PositiveIntegerField(_("version"), unique=True)
    # "" and NULL for version 1 (since always); else the ISO week and its Monday, by which changes are ordered.
    effective_week = models.CharField(_("effective from week"), max_length=8, blank=True)
    effective_monday = models.DateField(_("effective from"), null=True, blank=True)
    source = models.CharField(_("changed through"), max_length=12, choices=ChangeSource.choices)
    source_ref = models.CharField(_("reference"), max_length=60, blank=True)  # "proposal:12", "rubric:3"
    reason = models.TextField(_("reason for the change"), max_length=5000)
    # Why this change does not count as its week's one substantive change; "" for a substantive change.
    exempt_reason = models.TextField(_("why it is exempt from one change a week"), max_length=5000, blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    author_name = models.CharField(_("changed by"), max_length=150)
    created_at = models.DateTimeField(_("changed"), default=timezone.now)

    class Meta:
        ordering = ["number"]
        verbose_name = _("policy change")
        verbose_name_plural = _("policy changes")
        constraints = [
            # At most one substantive change takes effect per week, whichever path writes it.
            models.UniqueConstraint(
                fields=["effective_monday"], condition=Q(exempt_reason=""), name="policychange_one_per_week"
            ),
            models.CheckConstraint(
                condition=Q(number=1, effective_monday__isnull=True, effective_week="")
                | (Q(number__gt=1, effective_monday__isnull=False) & ~Q(effective_week="")),
                name="policychange_week_after_version_1",
            ),
            models.CheckConstraint(condition=~Q(reason=""), name="policychange_reason_required"),
        ]
        indexes = [
            # policy_value / policy_values: the changes in force by a week, latest first.
            models.Index(fields=["effective_monday", "number"], name="policychange_week_idx"),
        ]

    def __str__(self) -> str:
        return f"v{self.number} from {self.effective_week or '—'}"


class PolicyValue(models.Model):
    change = models.ForeignKey(PolicyChange, on_delete=models.PROTECT, related_name="values")
    key = models.CharField(_("parameter"), max_length=120)
    value = models.TextField(_("value"), max_length=2000)  # a number as text ("15", "2.5"), a time, or a text

    class Meta:
        ordering = ["change__number", "key"]
        verbose_name = _("policy value")
        verbose_name_plural = _("policy values")
        constraints = [models.UniqueConstraint(fields=["change", "key"], name="policyvalue_one_per_key")]
        indexes = [
            # policy_value: one key's values across changes.
            models.Index(fields=["key"], name="policyvalue_key_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.key} = {self.value}"

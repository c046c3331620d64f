"""Who takes part: team memberships and committee seats."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from allocations.models import Team
from core.history import policy_history


class MembershipRole(models.TextChoices):
    MEMBER = "member", _("Member")
    LEAD = "lead", _("Lead")


class TeamMembership(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_memberships")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(_("role"), max_length=10, choices=MembershipRole.choices, default=MembershipRole.MEMBER)

    class Meta:
        verbose_name = _("team membership")
        verbose_name_plural = _("team memberships")
        constraints = [models.UniqueConstraint(fields=["user", "team"], name="membership_unique_user_team")]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.get_role_display()})"


class SeatRole(models.TextChoices):
    CHAIR = "chair", _("Chair")
    PRODUCT_LEAD = "product_lead", _("Product lead")
    TECH_LEAD = "tech_lead", _("Tech lead")
    FINANCE = "finance", _("Finance")


class CommitteeSeatQuerySet(models.QuerySet["CommitteeSeat"]):
    def active(self, on: object = None) -> CommitteeSeatQuerySet:
        day = on or timezone.localdate()
        return self.filter(Q(active_from__lte=day) & (Q(active_to__isnull=True) | Q(active_to__gte=day)))


class CommitteeSeat(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="committee_seats")
    role = models.CharField(_("role"), max_length=20, choices=SeatRole.choices)
    active_from = models.DateField(_("active from"), default=timezone.localdate)
    active_to = models.DateField(_("active to"), null=True, blank=True)

    objects = CommitteeSeatQuerySet.as_manager()
    history = policy_history()

    class Meta:
        ordering = ["role", "active_from"]
        verbose_name = _("committee seat")
        verbose_name_plural = _("committee seats")
        constraints = [
            models.CheckConstraint(
                condition=Q(active_to__isnull=True) | Q(active_to__gte=F("active_from")),
                name="seat_active_to_after_from",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_role_display()}: {self.user}"

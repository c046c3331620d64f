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


class GrantSource(models.TextChoices):
    """Where a membership or seat came from: single sign-on keeps only its own in step, never a hand-made one."""

    MANUAL = "manual", _("By hand")
    SSO = "sso", _("Single sign-on")


class TeamMembership(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_memberships")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(_("role"), max_length=10, choices=MembershipRole.choices, default=MembershipRole.MEMBER)
    source = models.CharField(
        _("source"), max_length=10, choices=GrantSource.choices, default=GrantSource.MANUAL,
        help_text=_("Single sign-on adds and removes only the memberships it made."),
    )

    class Meta:
        verbose_name = _("team membership")
        verbose_name_plural = _("team memberships")
        constraints = [models.UniqueConstraint(fields=["user", "team"], name="membership_unique_user_team")]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.get_role_display()})"


class TeamFiling(models.Model):
    """How a team files its requests. With `lead_submits`, members write drafts and only a lead of the
    team puts one in front of the committee (committee.services.request_submit); without a row, or
    with it off, any member submits."""

    team = models.OneToOneField(Team, on_delete=models.CASCADE, related_name="filing", verbose_name=_("team"))
    lead_submits = models.BooleanField(
        _("members draft, the lead submits"), default=False,
        help_text=_("A member's submit is refused and the team's leads are told that a draft awaits them."),
    )
    changed_by_name = models.CharField(_("changed by"), max_length=150, blank=True)
    changed_at = models.DateTimeField(_("changed"), default=timezone.now)

    class Meta:
        verbose_name = _("team filing setting")
        verbose_name_plural = _("team filing settings")

    def __str__(self) -> str:
        return f"{self.team}: lead submits" if self.lead_submits else f"{self.team}: members submit"


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
    source = models.CharField(
        _("source"), max_length=10, choices=GrantSource.choices, default=GrantSource.MANUAL,
        help_text=_("Single sign-on opens and ends only the seats it made."),
    )

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


class SsoGroupMapping(models.Model):
    """One group at the identity provider (OpenID Connect claim or LDAP group) and what it gives in Docket.

    A group gives a team membership (team and role), a committee seat, or both. At every sign-in through
    single sign-on the person's memberships and seats that came from single sign-on are set to what their
    groups give now: added, changed and removed. Memberships and seats made by hand are never touched.
    """

    group = models.CharField(
        _("group"), max_length=200,
        help_text=_("The group's name exactly as the provider sends it (e.g. in the groups claim, or an LDAP cn)."),
    )
    team = models.ForeignKey(
        Team, on_delete=models.CASCADE, null=True, blank=True, related_name="sso_group_mappings",
        verbose_name=_("team"),
    )
    team_role = models.CharField(
        _("role in the team"), max_length=10, choices=MembershipRole.choices, default=MembershipRole.MEMBER,
    )
    seat_role = models.CharField(_("committee seat"), max_length=20, choices=SeatRole.choices, blank=True)

    class Meta:
        ordering = ["group", "team__name", "seat_role"]
        verbose_name = _("single sign-on group")
        verbose_name_plural = _("single sign-on groups")
        constraints = [
            models.CheckConstraint(condition=~Q(group=""), name="ssogroup_group_required"),
            models.CheckConstraint(
                condition=Q(team__isnull=False) | ~Q(seat_role=""), name="ssogroup_gives_team_or_seat",
            ),
            models.UniqueConstraint(
                fields=["group", "team"], condition=Q(team__isnull=False), name="ssogroup_unique_group_team",
            ),
            models.UniqueConstraint(
                fields=["group", "seat_role"], condition=~Q(seat_role=""), name="ssogroup_unique_group_seat",
            ),
        ]

    def __str__(self) -> str:
        gives = []
        if self.team_id is not None:
            gives.append(f"{self.team} ({self.get_team_role_display()})")
        if self.seat_role:
            gives.append(str(self.get_seat_role_display()))
        return f"{self.group} → {', '.join(gives)}"


class ReportingLine(models.Model):
    """Whom a person reports to, as the identity provider says (or as set by hand): the manager chain that
    committee.selectors.conflicts reads to find likely conflicts of interest.

    The manager is kept by username (`manager_username`), so a line can name a manager who has not signed in
    yet; it is matched to a person when read. Single sign-on changes only the lines it made (source "sso").
    """

    person = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="reporting_line", verbose_name=_("person"),
    )
    manager_username = models.CharField(
        _("manager"), max_length=150,
        help_text=_("The username of the person they report to, as the identity provider names them."),
    )
    source = models.CharField(
        _("source"), max_length=10, choices=GrantSource.choices, default=GrantSource.MANUAL,
        help_text=_("Single sign-on sets and clears only the lines it made."),
    )
    changed_at = models.DateTimeField(_("changed"), default=timezone.now)

    class Meta:
        ordering = ["person__username"]
        verbose_name = _("reporting line")
        verbose_name_plural = _("reporting lines")
        constraints = [models.CheckConstraint(condition=~Q(manager_username=""), name="reporting_manager_required")]

    def __str__(self) -> str:
        return f"{self.person} → {self.manager_username}"

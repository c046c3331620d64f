"""The schedulers: clusters' accounts for teams, scheduler tokens and each window's sync status."""

from __future__ import annotations

from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from allocations.models.plans import AllocationWindow
from allocations.models.resources import Cluster, Team
from core.history import policy_history


class ClusterAccount(models.Model):
    """The scheduler account a team's windows run under on a cluster (e.g. a Slurm account)."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="accounts", verbose_name=_("cluster"))
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="cluster_accounts", verbose_name=_("team"))
    account = models.CharField(
        _("account"),
        max_length=64,
        validators=[
            RegexValidator(
                r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
                _("Letters, digits, '.', '_' and '-' only, starting with a letter or digit."),
            )
        ],
    )
    history = policy_history()

    class Meta:
        ordering = ["cluster", "team"]
        verbose_name = _("cluster account")
        verbose_name_plural = _("cluster accounts")
        constraints = [
            models.UniqueConstraint(fields=["cluster", "team"], name="clusteraccount_unique_team_per_cluster"),
        ]

    def __str__(self) -> str:
        return f"{self.team} → {self.account} on {self.cluster}"


class SchedulerClient(models.Model):
    """A cluster's scheduler, allowed to read that cluster's windows and post its usage.

    Only a SHA-256 of the token is stored (tokens are 256-bit random, so a fast hash is
    enough); `token_prefix` lets people tell tokens apart. The token is shown once.
    """

    cluster = models.ForeignKey(
        Cluster, on_delete=models.PROTECT, related_name="scheduler_clients", verbose_name=_("cluster")
    )
    name = models.CharField(_("name"), max_length=100)
    token_prefix = models.CharField(_("token starts with"), max_length=16, editable=False)
    token_hash = models.CharField(_("token hash"), max_length=64, unique=True, editable=False)
    # After a rotation with an overlap, the token before it keeps working until previous_token_expires_at.
    # Unique, hence indexed: a token that is not the current one of any client is looked up here.
    previous_token_hash = models.CharField(
        _("previous token hash"), max_length=64, unique=True, null=True, blank=True, editable=False
    )
    previous_token_expires_at = models.DateTimeField(
        _("previous token works until"), null=True, blank=True, editable=False
    )
    is_active = models.BooleanField(_("active"), default=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    last_seen_at = models.DateTimeField(_("last seen"), null=True, blank=True, editable=False)

    class Meta:
        ordering = ["cluster", "name"]
        verbose_name = _("scheduler client")
        verbose_name_plural = _("scheduler clients")
        constraints = [
            models.UniqueConstraint(fields=["cluster", "name"], name="schedulerclient_unique_name_per_cluster"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.cluster.slug})"


class SyncState(models.TextChoices):
    IN_SYNC = "in_sync", _("In sync")
    SHORT = "short", _("Short")
    FAILED = "failed", _("Failed")


class WindowSyncStatus(models.Model):
    """How the cluster's scheduler held a window at its latest sync (one row per window, replaced)."""

    window = models.OneToOneField(AllocationWindow, on_delete=models.CASCADE, related_name="sync_status")
    client_name = models.CharField(_("reported by"), max_length=100)
    state = models.CharField(_("state"), max_length=10, choices=SyncState.choices)
    nodes_requested = models.PositiveIntegerField(_("nodes requested"))
    nodes_reserved = models.PositiveIntegerField(_("nodes reserved"))
    message = models.TextField(_("message"), blank=True)
    reported_at = models.DateTimeField(_("reported"))

    class Meta:
        verbose_name = _("window sync status")
        verbose_name_plural = _("window sync statuses")
        constraints = [
            models.CheckConstraint(condition=Q(state__in=[s.value for s in SyncState]), name="syncstatus_state_valid"),
        ]

    def __str__(self) -> str:
        return f"window {self.window_id}: {self.state}"

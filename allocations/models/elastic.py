"""The elastic pool's actions: idle grants lent, the burst reserve and the cold standby (docs/elastic.md)."""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from allocations.models.plans import AllocationWindow
from allocations.models.resources import Cluster, GpuPool, Team


class ElasticActionKind(models.TextChoices):
    IDLE = "idle", _("Granted but idle")
    PROMOTE = "promote", _("Burst promoted")
    NIGHT_OPEN = "night_open", _("Opened at night")


class ElasticAction(models.Model):
    """Something the elastic policy did to a pool, from `started_at` until the condition stopped (`ended_at`).

    Written by the hourly evaluation (allocations.elastic.services.elastic_evaluate): at most one action
    of a kind is in force per window (IDLE, NIGHT_OPEN) or per pool (PROMOTE), which the database holds.
    `gpus` are the GPUs moved: offered to preemptible work (IDLE, NIGHT_OPEN; 0 when the policy only
    flags) or promoted from the burst reserve (PROMOTE). `explanation` is the text built from the
    numbers when the action started, kept as written.
    """

    kind = models.CharField(_("kind"), max_length=12, choices=ElasticActionKind.choices)
    pool = models.ForeignKey(GpuPool, on_delete=models.PROTECT, related_name="elastic_actions", verbose_name=_("pool"))
    window = models.ForeignKey(
        AllocationWindow, on_delete=models.PROTECT, null=True, blank=True, related_name="elastic_actions",
        verbose_name=_("window"),
    )
    team = models.ForeignKey(
        Team, on_delete=models.PROTECT, null=True, blank=True, related_name="elastic_actions", verbose_name=_("team")
    )
    gpus = models.PositiveIntegerField(_("GPUs"))
    utilization_pct = models.DecimalField(_("measured utilization %"), max_digits=5, decimal_places=1)
    queue_wait_minutes = models.DecimalField(
        _("measured queue wait (minutes)"), max_digits=10, decimal_places=1, null=True, blank=True
    )
    span_start = models.DateTimeField(_("measured from"))
    span_end = models.DateTimeField(_("measured until"))
    # The version of the rules (governed.PolicyChange.number) whose thresholds the action started under.
    policy_version = models.PositiveIntegerField(_("policy version"))
    started_at = models.DateTimeField(_("started"))
    ended_at = models.DateTimeField(_("ended"), null=True, blank=True)
    explanation = models.TextField(_("explanation"))

    class Meta:
        ordering = ["-started_at", "-id"]
        verbose_name = _("elastic action")
        verbose_name_plural = _("elastic actions")
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=[choice.value for choice in ElasticActionKind]), name="elasticaction_kind_valid"
            ),
            models.CheckConstraint(
                condition=Q(ended_at__isnull=True) | Q(ended_at__gte=F("started_at")),
                name="elasticaction_ends_after_start",
            ),
            models.CheckConstraint(
                condition=Q(kind="promote", window__isnull=True) | (~Q(kind="promote") & Q(window__isnull=False)),
                name="elasticaction_window_iff_not_promote",
            ),
            models.UniqueConstraint(
                fields=["kind", "window"], condition=Q(ended_at__isnull=True, window__isnull=False),
                name="elasticaction_one_open_per_window",
            ),
            models.UniqueConstraint(
                fields=["kind", "pool"], condition=Q(ended_at__isnull=True, window__isnull=True),
                name="elasticaction_one_open_per_pool",
            ),
        ]
        indexes = [
            # The pool's elastic history page: its actions, newest first.
            models.Index(fields=["pool", "-started_at"], name="elasticaction_pool_started_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.pool_id}/{self.window_id}: {self.gpus} GPUs"


class AgentActionKind(models.TextChoices):
    LEND = "lend", _("Lent to preemptible work")
    RECLAIM = "reclaim", _("Taken back for the owner")
    PROMOTE = "promote", _("Burst capacity given")
    DEMOTE = "demote", _("Burst capacity taken back")
    STANDBY_WAKE = "standby_wake", _("Cold standby woken")
    STANDBY_END = "standby_end", _("Cold standby back to rest")
    NIGHT_OPEN = "night_open", _("Opened for the night")
    NIGHT_CLOSE = "night_close", _("Night opening closed")


class AgentAction(models.Model):
    """What the elastic agent next to a cluster's scheduler did (docket_scheduler.elastic_agent), as it reported it.

    Posted once per action with the agent's idempotency key (`POST /api/v1/elastic/actions/`): the same key again
    changes nothing. An event, not a span: a lend is followed by the reclaim that ends it. The hourly evaluation
    (ElasticAction) stays the reconciliation and the record; these are the minutes between its runs.
    """

    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="agent_actions",
                                verbose_name=_("cluster"))
    pool = models.ForeignKey(GpuPool, on_delete=models.PROTECT, related_name="agent_actions", verbose_name=_("pool"))
    window = models.ForeignKey(
        AllocationWindow, on_delete=models.PROTECT, null=True, blank=True, related_name="agent_actions",
        verbose_name=_("window"),
    )
    team = models.ForeignKey(
        Team, on_delete=models.PROTECT, null=True, blank=True, related_name="agent_actions", verbose_name=_("team")
    )
    kind = models.CharField(_("kind"), max_length=12, choices=AgentActionKind.choices)
    gpus = models.PositiveIntegerField(_("GPUs moved"))
    acted_at = models.DateTimeField(_("acted at"))
    utilization_pct = models.DecimalField(_("measured utilization %"), max_digits=5, decimal_places=1, null=True,
                                          blank=True)
    queue_wait_minutes = models.DecimalField(_("measured queue wait (minutes)"), max_digits=10, decimal_places=1,
                                             null=True, blank=True)
    span_minutes = models.PositiveIntegerField(_("measured over (minutes)"))
    measured_by = models.CharField(_("measured by"), max_length=40)  # "prometheus", "slurm"
    policy_version = models.PositiveIntegerField(_("policy version"))
    applied = models.TextField(_("applied"), max_length=1000)  # what the agent changed in the scheduler, its words
    idempotency_key = models.CharField(_("idempotency key"), max_length=100)
    reported_by = models.CharField(_("reported by"), max_length=100)
    received_at = models.DateTimeField(_("received"), default=timezone.now)

    class Meta:
        ordering = ["-acted_at", "-id"]
        verbose_name = _("agent action")
        verbose_name_plural = _("agent actions")
        constraints = [
            models.UniqueConstraint(fields=["cluster", "idempotency_key"], name="agentaction_unique_key_per_cluster"),
            models.CheckConstraint(condition=Q(kind__in=[choice.value for choice in AgentActionKind]),
                                   name="agentaction_kind_valid"),
        ]
        indexes = [models.Index(fields=["pool", "-acted_at"], name="agentaction_pool_acted_idx")]

    def __str__(self) -> str:
        return f"{self.kind} {self.gpus} GPUs on {self.pool_id} at {self.acted_at:%Y-%m-%d %H:%M}"

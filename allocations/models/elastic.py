"""The elastic pool's actions: idle grants lent, the burst reserve and the cold standby (docs/elastic.md)."""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext_lazy as _

from allocations.models.plans import AllocationWindow
from allocations.models.resources import GpuPool, Team


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

"""Teams, clusters, GPU pools and the usage the schedulers measured on them."""

from __future__ import annotations

from decimal import Decimal

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from core.datetimes import format_isoweek
from core.history import policy_history
from governed.params import POOL_PREFIX, PRICE, pool_price, pool_reserves
from governed.selectors import policy_values


class Department(models.Model):
    """A cost centre that holds teams: finance budgets by it, and the fair share is first the department's share of
    the whole, then the team's share within it (committee.scoring.fair_shares, docs/rubric.md)."""

    name = models.CharField(_("name"), max_length=100, unique=True)
    slug = models.SlugField(_("slug"), max_length=50, unique=True)
    fair_share_weight = models.PositiveIntegerField(
        _("fair-share weight"),
        default=1,
        validators=[MinValueValidator(1)],
        help_text=_("The department's entitled share of the whole is its weight over the sum of the weights at the "
                    "top level (every department's, and every team's that belongs to none)."),
    )
    history = policy_history()

    class Meta:
        ordering = ["name"]
        verbose_name = _("department")
        verbose_name_plural = _("departments")
        constraints = [
            models.CheckConstraint(condition=Q(fair_share_weight__gt=0), name="department_fair_share_weight_positive"),
        ]

    def __str__(self) -> str:
        return self.name


class Team(models.Model):
    name = models.CharField(_("name"), max_length=100, unique=True)
    slug = models.SlugField(_("slug"), max_length=50, unique=True)
    department = models.ForeignKey(
        Department,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="teams",
        verbose_name=_("department"),
        help_text=_("The cost centre the team belongs to. Empty: the team stands at the top level by itself."),
    )
    fair_share_weight = models.PositiveIntegerField(
        _("fair-share weight"),
        default=1,
        validators=[MinValueValidator(1)],
        help_text=_("The team's entitled share within its department is its weight over the sum of its "
                    "department's teams' weights (at the top level, when it has no department)."),
    )
    history = policy_history()

    class Meta:
        ordering = ["name"]
        verbose_name = _("team")
        verbose_name_plural = _("teams")
        constraints = [
            models.CheckConstraint(condition=Q(fair_share_weight__gt=0), name="team_fair_share_weight_positive"),
        ]

    def __str__(self) -> str:
        return self.name


class SchedulerKind(models.TextChoices):
    SLURM = "slurm", _("Slurm")
    KUEUE = "kueue", _("Kubernetes / Kueue")
    OTHER = "other", _("Other")


class Cluster(models.Model):
    slug = models.SlugField(_("slug"), max_length=50, unique=True)
    name = models.CharField(_("name"), max_length=100)
    scheduler_kind = models.CharField(_("scheduler"), max_length=10, choices=SchedulerKind.choices)

    class Meta:
        ordering = ["name"]
        verbose_name = _("cluster")
        verbose_name_plural = _("clusters")

    def __str__(self) -> str:
        return self.name


class GpuPool(models.Model):
    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="pools", verbose_name=_("cluster"))
    slug = models.SlugField(_("slug"), max_length=50)
    gpu_model = models.CharField(_("GPU model"), max_length=50)
    gpu_count = models.PositiveIntegerField(_("GPUs"), validators=[MinValueValidator(1)])
    gpus_per_node = models.PositiveIntegerField(_("GPUs per node"), default=8, validators=[MinValueValidator(1)])
    scheduler_label = models.CharField(
        _("scheduler label"),
        max_length=50,
        blank=True,
        help_text=_("How the scheduler selects this pool's nodes, e.g. the Slurm feature 'a100'."),
    )
    queue_wait_target_minutes = models.PositiveIntegerField(
        _("queue-wait target (minutes)"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_(
            "The service level: the monthly review flags a month whose mean queue wait is above it. Empty: no target."
        ),
    )
    history = policy_history()

    class Meta:
        ordering = ["cluster__name", "slug"]
        verbose_name = _("GPU pool")
        verbose_name_plural = _("GPU pools")
        constraints = [
            models.UniqueConstraint(fields=["cluster", "slug"], name="gpupool_unique_slug_per_cluster"),
            models.CheckConstraint(condition=Q(gpu_count__gt=0), name="gpupool_gpu_count_positive"),
            models.CheckConstraint(condition=Q(gpus_per_node__gt=0), name="gpupool_gpus_per_node_positive"),
            models.CheckConstraint(
                condition=Q(queue_wait_target_minutes__isnull=True) | Q(queue_wait_target_minutes__gt=0),
                name="gpupool_queue_wait_target_positive",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.key} ({self.gpu_count}× {self.gpu_model})"

    @property
    def key(self) -> str:
        """"cluster/pool", e.g. "atlas/a100": how the engine, explanations and pages name a pool."""
        return f"{self.cluster.slug}/{self.slug}"

    # A pool's burst reserve (held back from standard windows; preemptible work may use it) and cold standby (never
    # allocated: spare capacity for failures) are governed parameters, "pool.<cluster>/<slug>.burst_reserve_pct" and
    # ".standby_pct" (governed.params), never fields: read for a week by allocations.selectors.pool_reserves_for_week,
    # else for the current week at first use.
    # The fast-lane reserve ("pool.<cluster>/<slug>.fast_lane_pct", docs/fast-lane.md) is held back the same way.
    _reserves: tuple[int, int, int] | None = None

    def reserves(self) -> tuple[int, int, int]:
        """(burst reserve %, cold standby %, fast-lane reserve %) in force: those a selector set for a week, else the
        current week's in the one store (one query, then kept on the row)."""
        if self._reserves is None:
            week = format_isoweek(timezone.now())
            self._reserves = pool_reserves(policy_values(week=week, prefix=f"{POOL_PREFIX}{self.key}."), self.key)
        return self._reserves

    @property
    def burst_reserve_pct(self) -> int:
        return self.reserves()[0]

    @property
    def standby_pct(self) -> int:
        return self.reserves()[1]

    @property
    def fast_lane_pct(self) -> int:
        return self.reserves()[2]

    # Its price per GPU-hour is governed too, "pool.<cluster>/<slug>.price_per_gpu_hour": a reader of a week's charges
    # or costs reads the week's (allocations.selectors.pool_prices); this is the current week's, for the admin.
    @property
    def price_per_gpu_hour(self) -> Decimal:
        """The price per GPU-hour in force this week (one query)."""
        week = format_isoweek(timezone.now())
        return pool_price(policy_values(week=week, prefix=f"{POOL_PREFIX}{self.key}.{PRICE}"), self.key)


class UsageRecord(models.Model):
    """GPU use a scheduler reported for a team on a pool over a period.

    Feeds the fairness criterion and pre-fills each team's next usage report. The idempotency
    key is chosen by the client: the same key again changes nothing.
    """

    pool = models.ForeignKey(GpuPool, on_delete=models.PROTECT, related_name="usage_records", verbose_name=_("pool"))
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="usage_records", verbose_name=_("team"))
    period_start = models.DateTimeField(_("period start"))
    period_end = models.DateTimeField(_("period end"))
    gpu_hours_used = models.DecimalField(
        _("GPU-hours used"), max_digits=12, decimal_places=2, validators=[MinValueValidator(0)]
    )
    mean_utilization_pct = models.DecimalField(
        _("mean utilization %"),
        max_digits=5,
        decimal_places=1,
        validators=[MinValueValidator(0), MaxValueValidator(100)],
    )
    mean_queue_wait_minutes = models.DecimalField(
        _("mean queue wait (minutes)"), max_digits=10, decimal_places=1, default=0, validators=[MinValueValidator(0)]
    )
    window = models.ForeignKey(
        "AllocationWindow",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="usage_records",
        verbose_name=_("window"),
    )
    idempotency_key = models.CharField(_("idempotency key"), max_length=100)
    reported_by = models.CharField(_("reported by"), max_length=100, blank=True)
    reported_at = models.DateTimeField(_("reported"), auto_now_add=True)

    class Meta:
        ordering = ["period_start", "id"]
        verbose_name = _("usage record")
        verbose_name_plural = _("usage records")
        constraints = [
            models.UniqueConstraint(fields=["pool", "idempotency_key"], name="usage_unique_key_per_pool"),
            models.CheckConstraint(condition=Q(period_end__gt=F("period_start")), name="usage_period_end_after_start"),
            models.CheckConstraint(condition=Q(gpu_hours_used__gte=0), name="usagerecord_gpu_hours_not_negative"),
            models.CheckConstraint(
                condition=Q(mean_utilization_pct__gte=0) & Q(mean_utilization_pct__lte=100),
                name="usagerecord_utilization_0_100",
            ),
            models.CheckConstraint(condition=Q(mean_queue_wait_minutes__gte=0), name="usagerecord_wait_not_negative"),
        ]
        indexes = [
            # Fair share and dashboards: a period's usage summed per team.
            models.Index(fields=["period_start", "team"], name="usagerecord_period_team_idx"),
            # A new report's capacity check: the pool's reports ending after a time (services._usage_fits_pool).
            models.Index(fields=["pool", "period_end"], name="usagerecord_pool_end_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.team} on {self.pool}: {self.gpu_hours_used} GPU-h"

"""Resources and their tenants: teams, clusters and GPU pools.

This app knows nothing of committees: a team here is only the tenant of allocation windows.
"""

from __future__ import annotations

from zoneinfo import ZoneInfo

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from allocations.explanations import explanation_text
from core.history import policy_history
from core.texts import text_render
from governed.params import POOL_FIELDS, POOL_PREFIX, as_int, param_for
from governed.selectors import policy_values


class Team(models.Model):
    name = models.CharField(_("name"), max_length=100, unique=True)
    slug = models.SlugField(_("slug"), max_length=50, unique=True)
    fair_share_weight = models.PositiveIntegerField(
        _("fair-share weight"),
        default=1,
        validators=[MinValueValidator(1)],
        help_text=_("The team's entitled share is its weight over the sum of all teams' weights."),
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
    cost_per_gpu_hour = models.DecimalField(
        _("cost per GPU-hour"),
        max_digits=10,
        decimal_places=4,
        default=0,
        validators=[MinValueValidator(0)],
        help_text=_("What one GPU-hour of this pool costs; the monthly review multiplies GPU-hours used by it."),
    )
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
            models.CheckConstraint(condition=Q(cost_per_gpu_hour__gte=0), name="gpupool_cost_not_negative"),
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
    _reserves: tuple[int, int] | None = None

    def reserves(self) -> tuple[int, int]:
        """(burst reserve %, cold standby %) in force: those a selector set for a week, else the current week's in
        the one store (one query, then kept on the row)."""
        if self._reserves is None:
            year, number, _day = timezone.now().astimezone(ZoneInfo(settings.TIME_ZONE)).isocalendar()
            stored = policy_values(week=f"{year}-W{number:02d}", prefix=f"{POOL_PREFIX}{self.key}.")
            values = []
            for field in POOL_FIELDS:
                key = f"{POOL_PREFIX}{self.key}.{field}"
                found = param_for(key)
                default = found[0].default() if found and found[0].default else 0
                values.append(as_int(stored.get(key, default)))
            self._reserves = (values[0], values[1])
        return self._reserves

    @property
    def burst_reserve_pct(self) -> int:
        return self.reserves()[0]

    @property
    def standby_pct(self) -> int:
        return self.reserves()[1]


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


# --- Published plans and their windows ------------------------------------------------------


class PlanSequence(models.Model):
    """The change sequence: a single row holding the `change_seq` of the latest published plan.

    Publishing locks this row (SELECT ... FOR UPDATE) for the rest of its transaction, so
    plans are numbered in commit order and a poller's cursor never skips a change.
    """

    value = models.PositiveBigIntegerField(_("last change"), default=0)

    class Meta:
        verbose_name = _("plan sequence")

    def __str__(self) -> str:
        return str(self.value)


class AllocationPlan(models.Model):
    """One published version of a week's allocation. Rows are written once and never edited.

    `version` counts per week; version n+1 `supersedes` version n. `change_seq` orders every
    plan of every week by publication and is the windows API's cursor. `source_ref` names
    what the plan was computed from (e.g. "review-cycle:12") as plain text: this app knows
    nothing of committees.
    """

    week = models.CharField(_("ISO week"), max_length=8)
    version = models.PositiveIntegerField(_("version"))
    change_seq = models.PositiveBigIntegerField(_("change sequence"), unique=True)
    week_starts_at = models.DateTimeField(_("week starts"))
    week_ends_at = models.DateTimeField(_("week ends"))
    source_ref = models.CharField(_("source"), max_length=100, blank=True)
    published_at = models.DateTimeField(_("published"), default=timezone.now)
    published_by_name = models.CharField(_("published by"), max_length=150)
    supersedes = models.OneToOneField(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="superseded_by",
        verbose_name=_("supersedes"),
    )
    note = models.TextField(_("note"), blank=True)
    # The note as a code with parameters when Docket wrote it (core.texts), rendered in the reader's language;
    # `note` keeps it as written then (the API and the archive show that), and is what an older plan shows.
    note_text = models.JSONField(_("note, as a code"), default=dict, blank=True)

    class Meta:
        ordering = ["-week", "-version"]
        verbose_name = _("allocation plan")
        verbose_name_plural = _("allocation plans")
        constraints = [
            # Also the index for "the current (highest) version of a week".
            models.UniqueConstraint(fields=["week", "version"], name="plan_unique_version_per_week"),
            models.CheckConstraint(condition=Q(week__regex=r"^\d{4}-W\d{2}$"), name="plan_week_format"),
            models.CheckConstraint(condition=Q(version__gt=0), name="plan_version_positive"),
            models.CheckConstraint(
                condition=Q(week_ends_at__gt=F("week_starts_at")), name="plan_week_ends_after_start"
            ),
            models.CheckConstraint(
                condition=(Q(version=1) & Q(supersedes__isnull=True))
                | (Q(version__gt=1) & Q(supersedes__isnull=False)),
                name="plan_supersedes_iff_not_first",
            ),
        ]
        indexes = [
            # Windows API without `week`: the plans of weeks that have not ended.
            models.Index(fields=["week_ends_at"], name="plan_week_ends_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.week} v{self.version}"

    @property
    def note_display(self) -> str:
        """The note in the reader's language (core.texts); as written when it has no code."""
        return text_render(self.note_text, fallback=self.note)


class WindowTier(models.TextChoices):
    PRIORITY = "priority", _("Priority")
    STANDARD = "standard", _("Standard")
    PREEMPTIBLE = "preemptible", _("Preemptible")


class AllocationWindow(models.Model):
    """GPUs of one pool held for one team over [start, end). Written once, never edited.

    `plan` is the version that first published the window. A later version that places the
    same window (same pool, team, GPUs, times, tier and request) carries it over unchanged, so
    its id, and the scheduler objects made for it, survive a correction; a version that does
    not place it any more records a `WindowWithdrawal`. `week`, `cluster` and `created_seq`
    copy the plan's and pool's values so the windows API reads one table.
    """

    plan = models.ForeignKey(
        AllocationPlan, on_delete=models.PROTECT, related_name="windows", verbose_name=_("first published in")
    )
    week = models.CharField(_("ISO week"), max_length=8)
    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="windows", verbose_name=_("cluster"))
    pool = models.ForeignKey(GpuPool, on_delete=models.PROTECT, related_name="windows", verbose_name=_("pool"))
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="windows", verbose_name=_("team"))
    gpu_count = models.PositiveIntegerField(_("GPUs"))
    start = models.DateTimeField(_("start"))
    end = models.DateTimeField(_("end"))
    tier = models.CharField(_("tier"), max_length=12, choices=WindowTier.choices)
    request_ref = models.PositiveBigIntegerField(_("request"), null=True, blank=True)
    explanation = models.TextField(_("engine's explanation"), blank=True)
    created_seq = models.PositiveBigIntegerField(_("published at change"))

    class Meta:
        ordering = ["start", "id"]
        verbose_name = _("allocation window")
        verbose_name_plural = _("allocation windows")
        constraints = [
            models.CheckConstraint(condition=Q(end__gt=F("start")), name="window_end_after_start"),
            models.CheckConstraint(condition=Q(gpu_count__gt=0), name="window_gpu_count_positive"),
            models.CheckConstraint(
                condition=Q(tier__in=[choice.value for choice in WindowTier]), name="window_tier_valid"
            ),
        ]
        indexes = [
            # Windows API with `week`: a cluster's windows of one week, in id (page) order.
            models.Index(fields=["cluster", "week", "id"], name="window_cluster_week_idx"),
            # Windows API without `week`: a cluster's windows that have not ended.
            models.Index(fields=["cluster", "end"], name="window_cluster_end_idx"),
            # The request page: the windows placed for one request.
            models.Index(fields=["request_ref"], name="window_request_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.team} {self.gpu_count}× {self.pool.slug} {self.start:%Y-%m-%d %H:%M}–{self.end:%H:%M}"

    @property
    def gpu_hours(self) -> float:
        return self.gpu_count * (self.end - self.start).total_seconds() / 3600


class WindowWithdrawal(models.Model):
    """A window that a newer plan version no longer places, and the version that dropped it."""

    window = models.OneToOneField(AllocationWindow, on_delete=models.PROTECT, related_name="withdrawal")
    plan = models.ForeignKey(AllocationPlan, on_delete=models.PROTECT, related_name="withdrawals")
    change_seq = models.PositiveBigIntegerField(_("withdrawn at change"))

    class Meta:
        verbose_name = _("window withdrawal")
        verbose_name_plural = _("window withdrawals")

    def __str__(self) -> str:
        return f"window {self.window_id} withdrawn by {self.plan}"


class PlanExplanation(models.Model):
    """The engine's explanation of one demand of a plan version, placed or not, in priority order.

    `reasons` holds the engine's reason codes and parameters (`[{"code": ..., "params": ...}]`,
    see docs/engine.md); `text` the words they were rendered to when the plan was published,
    which archived records keep. Rows published before reasons were stored have only `text`.
    """

    plan = models.ForeignKey(AllocationPlan, on_delete=models.PROTECT, related_name="explanations")
    request_ref = models.PositiveBigIntegerField(_("request"))
    position = models.PositiveIntegerField(_("priority position"))
    placed = models.BooleanField(_("placed"))
    shortened = models.BooleanField(_("shortened"), default=False)
    text = models.TextField(_("explanation"))
    reasons = models.JSONField(_("reasons"), default=list, blank=True)

    class Meta:
        ordering = ["plan", "position"]
        verbose_name = _("plan explanation")
        verbose_name_plural = _("plan explanations")
        constraints = [
            models.UniqueConstraint(fields=["plan", "request_ref"], name="planexplanation_unique_request"),
        ]
        indexes = [
            # The request page: the explanations given to one request, newest plan first.
            models.Index(fields=["request_ref", "plan"], name="planexplanation_request_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.plan}: request {self.request_ref}: {self.text}"

    def display_text(self) -> str:
        """The explanation in the active language, rendered from its reasons (else the text as published)."""
        if not self.reasons:
            return self.text
        return explanation_text(self.reasons, week_start=self.plan.week_starts_at)


# --- Schedulers ------------------------------------------------------------------------------


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


# --- The elastic pool (docs/elastic.md) ------------------------------------------------------


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

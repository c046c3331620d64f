"""Published plans and their windows: what each team holds, where and when, and why."""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from allocations.explanations import explanation_text
from allocations.models.resources import Cluster, GpuPool, Team
from core.texts import text_render


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
    # The chair let this preemptible window (an emergency) use the pool's cold standby: how many of its GPUs are the
    # standby's (docs/emergencies.md). The windows API says it, and the elastic agent wakes that many.
    standby_gpu_count = models.PositiveIntegerField(
        _("GPUs of the cold standby"), default=0,
        help_text=_("How many of this preemptible window's GPUs the chair let it take from the pool's cold standby."),
    )

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
            models.CheckConstraint(
                condition=Q(standby_gpu_count=0)
                | Q(tier=WindowTier.PREEMPTIBLE, standby_gpu_count__lte=F("gpu_count")),
                name="window_standby_preemptible_within_gpus",
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

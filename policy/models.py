"""The policy lab's records: proposals, their changes, benchmark figures, comments and votes."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from core.texts import text_render

TEXT_MAX = 5000


class ProposalStatus(models.TextChoices):
    OPEN = "open", _("Open")
    ADOPTED = "adopted", _("Adopted")
    DECLINED = "declined", _("Declined")


class Proposal(models.Model):
    """A proposed change of one or more policy parameters, from its filing to its observed result.

    At most one adopted proposal takes effect per ISO week: a unique constraint on the effective week of
    adopted proposals holds it whichever code path writes.
    """

    title = models.CharField(_("title"), max_length=200)
    reason = models.TextField(_("reason"), max_length=TEXT_MAX)
    expected_effect = models.TextField(_("expected effect"), max_length=TEXT_MAX)
    status = models.CharField(_("status"), max_length=10, choices=ProposalStatus.choices, default=ProposalStatus.OPEN)
    proposer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    proposer_name = models.CharField(_("proposed by"), max_length=150)
    created_at = models.DateTimeField(_("proposed"), default=timezone.now)
    # The chair's decision.
    effective_week = models.CharField(_("effective from week"), max_length=8, blank=True)
    effective_monday = models.DateField(_("effective from"), null=True, blank=True)
    decided_by_name = models.CharField(_("decided by"), max_length=150, blank=True)
    decided_at = models.DateTimeField(_("decided"), null=True, blank=True)
    decision_reason = models.TextField(_("chair's reason"), max_length=TEXT_MAX, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # When nothing was left to write: at adoption (the store holds the change, every reader reads it), or once its
    # effective week began, for a pool's reserves, which are also written into the pool's own fields.
    applied_at = models.DateTimeField(_("applied"), null=True, blank=True)
    # What was applied, as written then; `applied_note_text` the same as a code (policy/texts.py), shown in the
    # reader's language by `applied_note_display`.
    applied_note = models.TextField(_("what was applied"), max_length=TEXT_MAX, blank=True)
    applied_note_text = models.JSONField(_("what was applied, as a code"), default=dict, blank=True)
    # The observed result, asked for within 24 hours of the end of the first week the change applied.
    observed_result = models.TextField(_("observed result"), max_length=TEXT_MAX, blank=True)
    observed_at = models.DateTimeField(_("observed result recorded"), null=True, blank=True)
    observed_by_name = models.CharField(_("observed result by"), max_length=150, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("policy proposal")
        verbose_name_plural = _("policy proposals")
        constraints = [
            # One substantive change per week: the board refuses a second adoption with the next free week; this
            # holds when two chairs adopt at once.
            models.UniqueConstraint(
                fields=["effective_week"], condition=Q(status="adopted"), name="proposal_one_adopted_per_week"
            ),
            models.CheckConstraint(
                condition=Q(status="open") | (~Q(decided_by_name="") & Q(decided_at__isnull=False)),
                name="proposal_decision_has_chair",
            ),
            models.CheckConstraint(
                condition=~Q(status="adopted") | (~Q(effective_week="") & Q(effective_monday__isnull=False)),
                name="proposal_adopted_has_week",
            ),
            models.CheckConstraint(condition=~Q(title="") & ~Q(reason=""), name="proposal_title_reason_required"),
        ]
        indexes = [
            # The board: proposals by status, newest first.
            models.Index(fields=["status", "-created_at"], name="proposal_board_idx"),
        ]

    def __str__(self) -> str:
        return self.title

    def applied_note_display(self) -> str:
        """What was applied, in the reader's language (core.texts); as written when it has no code."""
        return text_render(self.applied_note_text, fallback=self.applied_note)


class ProposalChange(models.Model):
    """One parameter the proposal changes: its key (policy.parameters), the value when proposed and the new one."""

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="changes")
    key = models.CharField(_("parameter"), max_length=120)
    label = models.CharField(_("label"), max_length=200)
    unit = models.CharField(_("unit"), max_length=30, blank=True)
    old_value = models.CharField(_("value when proposed"), max_length=30)
    new_value = models.CharField(_("proposed value"), max_length=30)

    class Meta:
        ordering = ["pk"]
        constraints = [
            models.UniqueConstraint(fields=["proposal", "key"], name="proposalchange_one_per_key"),
        ]

    def __str__(self) -> str:
        return f"{self.key}: {self.old_value} → {self.new_value}"


class FigureMetric(models.TextChoices):
    THROUGHPUT = "throughput", _("Training throughput")
    JITTER = "latency_jitter", _("Latency jitter")
    COST = "cost", _("Cost")
    OTHER = "other", _("Other")


class FigureStage(models.TextChoices):
    STAGING = "staging", _("Staging benchmark")
    OBSERVED = "observed", _("Observed result")


class BenchmarkFigure(models.Model):
    """A measured number with its unit: a staging benchmark filed with the proposal, or the observed result."""

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="figures")
    stage = models.CharField(_("stage"), max_length=10, choices=FigureStage.choices, default=FigureStage.STAGING)
    metric = models.CharField(_("metric"), max_length=20, choices=FigureMetric.choices)
    label = models.CharField(_("what was measured"), max_length=200, blank=True)
    baseline = models.DecimalField(_("today"), max_digits=14, decimal_places=3, null=True, blank=True)
    value = models.DecimalField(_("with the change"), max_digits=14, decimal_places=3)
    unit = models.CharField(_("unit"), max_length=30)

    class Meta:
        ordering = ["stage", "pk"]
        constraints = [models.CheckConstraint(condition=~Q(unit=""), name="figure_unit_required")]

    def __str__(self) -> str:
        return f"{self.metric}: {self.value} {self.unit}"


class ProposalComment(models.Model):
    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    author_name = models.CharField(_("by"), max_length=150)
    # Said for a team the author belongs to, or "" for themself.
    team_name = models.CharField(_("for team"), max_length=150, blank=True)
    body = models.TextField(_("comment"), max_length=TEXT_MAX)
    created_at = models.DateTimeField(_("at"), default=timezone.now)

    class Meta:
        ordering = ["created_at", "pk"]
        constraints = [models.CheckConstraint(condition=~Q(body=""), name="proposalcomment_body_required")]

    def __str__(self) -> str:
        return f"{self.author_name}: {self.body[:40]}"


class VoteChoice(models.TextChoices):
    SUPPORT = "support", _("Support")
    AGAINST = "against", _("Against")


class ProposalVote(models.Model):
    """One vote per person and proposal; a person changes theirs by voting again."""

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="votes")
    voter = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    voter_name = models.CharField(_("by"), max_length=150)
    team_name = models.CharField(_("for team"), max_length=150, blank=True)
    choice = models.CharField(_("vote"), max_length=10, choices=VoteChoice.choices)
    comment = models.TextField(_("comment"), max_length=TEXT_MAX)
    created_at = models.DateTimeField(_("voted"), default=timezone.now)
    updated_at = models.DateTimeField(_("changed"), default=timezone.now)

    class Meta:
        ordering = ["created_at", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["proposal", "voter"], name="proposalvote_one_per_person"),
            models.CheckConstraint(condition=~Q(comment=""), name="proposalvote_comment_required"),
        ]

    def __str__(self) -> str:
        return f"{self.voter_name}: {self.choice}"

"""The proposal board, a proposal's page with its discussion and the chair's decision, and the proposal form."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from allocations.models import Team
from committee import selectors as committee_selectors
from core.errors import RoleRequired
from core.http import AuthenticatedHttpRequest
from core.parsers import parse_whole_number
from policy import parameters, selectors, services
from policy.models import FigureMetric, Proposal, VoteChoice

FIGURE_ROWS = 3
ACTIONS = ("comment", "vote", "adopt", "decline", "observe")


def _errors(error: ValidationError) -> list[str]:
    """Every message of a service's refusal, field by field, for one list on the page."""
    if hasattr(error, "error_dict"):
        return [message for messages_ in error.message_dict.values() for message in messages_]
    return list(error.messages)


def replay_query(proposal: Proposal) -> str:
    """The replay block's query: the proposal's changes as key=value pairs, then weeks=8, urlencoded."""
    return urlencode(selectors.replay_query_pairs(proposal))


def replay_url(proposal: Proposal) -> str:
    """The replay partial's address with the proposal's query."""
    return f"{reverse('policy:replay-partial')}?{replay_query(proposal)}"


@login_required
@require_GET
def board(request: AuthenticatedHttpRequest) -> HttpResponse:
    now = timezone.now()
    return render(request, "policy/board.html", {
        "board": selectors.proposal_board(now=now),
        "next_free_week": selectors.week_next_free(now=now),
    })


def _team(request: AuthenticatedHttpRequest) -> Team | None:
    raw = request.POST.get("team", "")
    if not raw:
        return None
    pk = parse_whole_number(raw)
    team = None if pk is None else Team.objects.filter(pk=pk).first()
    if team is None:
        raise ValidationError({"team": [_("Choose one of your teams.")]})
    return team


def _get(pk: int) -> Proposal:
    try:
        return selectors.proposal_get(pk=pk)
    except Proposal.DoesNotExist:
        raise Http404(_("No such proposal.")) from None


def _detail(request: AuthenticatedHttpRequest, proposal: Proposal, *, errors: dict[str, list[str]] | None = None,
            posted: dict[str, Any] | None = None, status: int = 200) -> HttpResponse:
    now = timezone.now()
    is_chair = committee_selectors.user_is_chair(user=request.user)
    observed = selectors.observed_status(proposal, now=now)
    figures = list(proposal.figures.all())
    my_vote = selectors.proposal_vote_of(proposal=proposal, user_id=request.user.pk)
    posted = posted or {}
    form = {
        "body": posted.get("body", ""),
        "comment": posted.get("comment", my_vote.comment if my_vote else ""),
        "choice": posted.get("choice", my_vote.choice if my_vote else ""),
        "effective_week": posted.get("effective_week", "") or selectors.week_next_free(now=now),
        "decision_reason": posted.get("decision_reason", ""),
        "observed_result": posted.get("observed_result", proposal.observed_result),
    }
    return render(request, "policy/proposal_detail.html", {
        "proposal": proposal,
        "changes": list(proposal.changes.all()),
        "staging": [f for f in figures if f.stage == "staging"],
        "observed_figures": [f for f in figures if f.stage == "observed"],
        "comments": list(proposal.comments.all()),
        "votes": list(proposal.votes.all()),
        "my_vote": my_vote,
        "form": form,
        "my_teams": list(committee_selectors.team_list_for_user(user=request.user)),
        "is_chair": is_chair,
        "can_observe": observed not in (None, selectors.ObservedStatus.SCHEDULED)
        and (is_chair or proposal.proposer_id == request.user.pk),
        "next_free_week": selectors.week_next_free(now=now),
        "observed": observed,
        "observed_label": selectors.observed_status_label(observed),
        "observed_due_at": selectors.observed_due_at(proposal),
        "replay_url": replay_url(proposal),
        "vote_choices": VoteChoice.choices,
        "metrics": FigureMetric.choices,
        "figure_rows": range(1, FIGURE_ROWS + 1),
        "errors": {action: (errors or {}).get(action, []) for action in ACTIONS},
    }, status=status)


@login_required
@require_GET
def proposal_detail(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    return _detail(request, _get(pk))


def _figure_rows(request: AuthenticatedHttpRequest) -> list[dict[str, str]]:
    return [{field: request.POST.get(f"figure-{n}-{field}", "") for field in services.FIGURE_FIELDS}
            for n in range(1, FIGURE_ROWS + 1)]


@login_required
@require_POST
def proposal_act(request: AuthenticatedHttpRequest, pk: int, action: str) -> HttpResponse:
    """One form of the proposal page: comment, vote, adopt, decline or observe. Errors re-show the page (400)."""
    if action not in ACTIONS:
        raise Http404(_("No such action."))
    proposal = _get(pk)
    now = timezone.now()
    post = request.POST
    if action in ("adopt", "decline") and not committee_selectors.user_is_chair(user=request.user):
        raise RoleRequired(_("Only the chair adopts or declines a proposal."), role=_("the chair's seat"),
                           elsewhere=[(_("The proposal board"), reverse("policy:board"))])
    try:
        if action == "comment":
            services.proposal_comment(actor=request.user, proposal=proposal, body=post.get("body", ""),
                                      team=_team(request))
            done = _("Your comment is posted.")
        elif action == "vote":
            services.proposal_vote(actor=request.user, proposal=proposal, choice=post.get("choice", ""),
                                   comment=post.get("comment", ""), team=_team(request), now=now)
            done = _("Your vote is recorded.")
        elif action == "adopt":
            adopted = services.proposal_adopt(actor=request.user, proposal=proposal, now=now,
                                              effective_week=post.get("effective_week", ""),
                                              reason=post.get("decision_reason", ""))
            done = _("Adopted: it takes effect from week %(week)s.") % {"week": adopted.effective_week}
        elif action == "decline":
            services.proposal_decline(actor=request.user, proposal=proposal, now=now,
                                      reason=post.get("decision_reason", ""))
            done = _("Declined.")
        elif action == "observe":
            services.proposal_observe(actor=request.user, proposal=proposal, now=now,
                                      result=post.get("observed_result", ""), figures=_figure_rows(request))
            done = _("The observed result is recorded.")
        else:
            raise Http404(_("No such action."))
    except ValidationError as error:
        posted = {key: post.get(key, "") for key in post}
        return _detail(request, _get(pk), errors={action: _errors(error)}, posted=posted, status=400)
    messages.success(request, done)
    return redirect("policy:proposal", pk=pk)


@login_required
@require_http_methods(["GET", "POST"])
def proposal_new(request: AuthenticatedHttpRequest) -> HttpResponse:
    params = parameters.parameter_list()
    current = parameters.current_values()
    errors: list[str] = []
    posted: dict[str, str] = {}
    if request.method == "POST":
        posted = {key: request.POST.get(key, "") for key in request.POST}
        changes = {key.removeprefix("change:"): value.strip() for key, value in posted.items()
                   if key.startswith("change:") and value.strip()}
        try:
            proposal = services.proposal_submit(
                actor=request.user, title=posted.get("title", ""), reason=posted.get("reason", ""),
                expected_effect=posted.get("expected_effect", ""), changes=changes, figures=_figure_rows(request))
        except ValidationError as error:
            errors = _errors(error)
        else:
            messages.success(request, _("Your proposal is on the board."))
            return redirect("policy:proposal", pk=proposal.pk)
    form = {name: posted.get(name, "") for name in ("title", "reason", "expected_effect")}
    groups: dict[str, list[dict[str, Any]]] = {}
    for param in params:
        groups.setdefault(param.group, []).append({
            "param": param, "current": parameters.value_text(current[param.key]) if param.key in current else "",
            "posted": posted.get(f"change:{param.key}", ""),
        })
    return render(request, "policy/proposal_form.html", {
        "groups": list(groups.items()), "errors": errors, "form": form, "metrics": FigureMetric.choices,
        "figure_rows": range(1, FIGURE_ROWS + 1),
    }, status=400 if errors else 200)

"""The request page's block on corrections and appeals: `{% request_corrections gpu_request %}`.

A tag rather than view context, so the request page includes the block with one line and any view
that renders the page (the request page, a refused correction or appeal) shows it the same way.
"""

from __future__ import annotations

from typing import Any

from django import template

from committee import selectors
from committee.forms import AppealDecisionForm, AppealForm, CorrectionForm
from committee.models import GpuRequest

register = template.Library()


@register.inclusion_tag("committee/_request_corrections.html", takes_context=True)
def request_corrections(context: template.Context, gpu_request: GpuRequest) -> dict[str, Any]:
    request = context["request"]
    panel = selectors.request_corrections_for_viewer(viewer=request.user, gpu_request=gpu_request)
    decision = getattr(gpu_request, "decision", None)
    initial = (
        {"outcome": decision.outcome, "granted_gpu_count": decision.granted_gpu_count,
         "alternative": decision.alternative_id, "rationale": decision.rationale}
        if decision is not None
        else {}
    )
    return {
        "request": request,
        "csrf_token": context.get("csrf_token"),
        "gpu_request": gpu_request,
        "decision": decision,
        "panel": panel,
        # "Grant the alternative" is offered where the request has feasible alternatives cheaper than it.
        "alternatives": [a for a in gpu_request.alternatives.all()
                         if a.feasible and a.gpu_hours < gpu_request.requested_gpu_hours]
        if panel.can_correct or panel.can_amend else [],
        "correction_form": context.get("correction_form") or CorrectionForm(initial=initial),
        "appeal_form": context.get("appeal_form") or AppealForm(),
        "appeal_decision_form": context.get("appeal_decision_form") or AppealDecisionForm(initial=initial),
        "open_with_errors": bool(
            context.get("correction_form") or context.get("appeal_form") or context.get("appeal_decision_form")
        ),
    }

"""Generated archive pages: each week's decision record and each rubric version's policy page.

Called by the receivers of the committee's signals (reports/receivers.py): after a cycle is
finalized, after its plan is published, after the rubric changes. Each sync reads the committee's
and allocations' records through their selectors, writes the structured data and its Markdown
as the page's next revision, and is idempotent: when nothing changed, nothing is written.
"""

from __future__ import annotations

from django.db import IntegrityError
from django.utils.translation import gettext as _

from committee.models import CycleStatus, ReviewCycle, RubricVersion
from reports import records, selectors
from reports.models import Page, PageKind, PageRevision
from reports.services.pages import page_append_system, page_create_system


def _sync(
    *, source_key: str, slug: str, kind: str, title: str, generated: str, notes: str, data: dict, summary: str
) -> PageRevision | None:
    def body_from(previous: str | None) -> str:
        return records.merge_generated(previous, generated, notes)

    page = Page.objects.filter(source_key=source_key).first()
    if page is None:
        try:
            page = page_create_system(
                slug=slug, kind=kind, source_key=source_key, title=title, body=body_from(None), data=data,
                summary=summary,
            )
            return page.latest_revision
        except IntegrityError:
            # Created meanwhile by a concurrent sync: append to it instead.
            page = Page.objects.get(source_key=source_key)
    return page_append_system(page=page, title=title, data=data, summary=summary, body_from=body_from)


def policy_page_sync(*, rubric_version: RubricVersion) -> PageRevision | None:
    """Write the policy page of a rubric version: old and new weights, guidance, the reason, who and when.

    Creates the page `rubric-v<n>` on first call; afterwards appends a revision only if the
    generated part would change. Returns the new revision, or None when nothing changed.
    """
    data = selectors.policy_data(rubric_version=rubric_version)
    return _sync(
        source_key=f"rubric:{rubric_version.number}",
        slug=records.policy_slug(rubric_version.number),
        kind=PageKind.POLICY,
        title=_("Rubric version %(n)d") % {"n": rubric_version.number},
        generated=records.policy_markdown(data),
        notes=records.policy_notes_placeholder(),
        data=data,
        summary=_("Recorded the rubric change to version %(n)d") % {"n": rubric_version.number},
    )


def decision_record_sync(*, cycle: ReviewCycle) -> PageRevision | None:
    """Write a week's decision record from the committee's records: generated at finalize, updated at publish.

    Creates `decision-record-<week>` (and the policy page of the cycle's rubric version, which the
    record links to) on first call; afterwards appends a revision when the generated part or the
    structured data changed, keeping committee members' notes outside the generated part. Returns
    the new revision, or None when nothing changed, so it is safe to call any number of times.
    """
    policy_page_sync(rubric_version=cycle.rubric)
    data = selectors.decision_record_data(cycle=cycle)
    plan = data.get("plan")  # the plan's data, or None before one is published
    if cycle.status == CycleStatus.PUBLISHED and isinstance(plan, dict):
        summary = _("Updated: plan version %(v)d published") % {"v": plan["version"]}
    elif cycle.status == CycleStatus.FINALIZED:
        summary = _("Generated: week %(week)s finalized") % {"week": cycle.week}
    else:
        summary = _("Regenerated from the committee's records")
    return _sync(
        source_key=f"cycle:{cycle.week}",
        slug=records.decision_record_slug(cycle.week),
        kind=PageKind.DECISION_RECORD,
        title=_("Decision record %(week)s") % {"week": cycle.week},
        generated=records.decision_record_markdown(data),
        notes=records.decision_record_notes_placeholder(),
        data=data,
        summary=summary,
    )

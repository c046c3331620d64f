"""Generated archive pages: each week's decision record and each change of the committee's rules.

Called by the receivers of the committee's signals (reports/receivers.py): a week's record after the transaction
that finalizes a cycle, publishes its plan, corrects a decision or files or decides an appeal has committed, through
the outbox (`decision_record_enqueue` inside that transaction, the task `reports.write_decision_record` after it);
a change of the governed parameters after it committed. Each sync reads the committee's and allocations' records
through their selectors, writes the structured data and its Markdown as the page's next revision, and is
idempotent: when nothing changed, nothing is written.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError
from django.db.models import Q
from django.utils import translation
from django.utils.translation import gettext as _

from committee.models import CycleStatus, ReviewCycle
from committee.outbox import outbox_enqueue
from committee.selectors import cycle_record_key, rubric_for_week
from core.locks import write_transaction
from governed.models import PolicyChange
from governed.services import policy_version_1
from policy.models import Proposal
from reports import governed_pages, records, selectors
from reports.models import Page, PageKind, PageRevision
from reports.services import pages
from reports.services.pages import page_append_system, page_create_system


def _sync(
    *, source_key: str, slug: str, kind: str, title: str, generated: str, notes: str, data: Mapping[str, object],
    summary: str,
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
            page = Page.objects.filter(source_key=source_key).first()
            if page is None:
                raise ValidationError(
                    _("The archive address “%(slug)s” is taken by another page, so “%(title)s” cannot be written "
                      "there; an operator has to move that page first.") % {"slug": slug, "title": title}
                ) from None
    return page_append_system(page=page, title=title, data=data, summary=summary, body_from=body_from)


def policy_change_page_sync(*, change: PolicyChange) -> PageRevision | None:
    """Write the archive page of a change of the governed parameters (`policy-change-v<n>`): each value old and
    new, the reason, why it is exempt from one change a week if it is, who and when. Creates the page on first
    call; afterwards appends a revision only if the generated part would change (None when nothing did)."""
    data = governed_pages.policy_change_data(change=change)
    return _sync(
        source_key=f"policy-change:{change.number}",
        slug=governed_pages.policy_change_slug(change.number),
        kind=PageKind.POLICY,
        title=_("Policy version %(n)d") % {"n": change.number},
        generated=governed_pages.policy_change_markdown(data),
        notes=records.policy_notes_placeholder(),
        data=data,
        summary=_("Recorded the policy change to version %(n)d") % {"n": change.number},
    )


def proposal_page_sync(*, proposal: Proposal, summary: str) -> PageRevision | None:
    """Write a policy proposal's archive page (`policy-proposal-<id>`): one revision per step (filed, a comment, a
    vote, the decision, applied, the observed result), each with the step as its summary; idempotent."""
    data = selectors.proposal_data(proposal=proposal)
    return _sync(
        source_key=f"policy-proposal:{proposal.pk}",
        slug=records.proposal_slug(proposal.pk),
        kind=PageKind.POLICY,
        title=_("Policy proposal #%(n)d: %(title)s") % {"n": proposal.pk, "title": proposal.title},
        generated=records.proposal_markdown(data),
        notes=records.policy_notes_placeholder(),
        data=data,
        summary=summary[:pages.MAX_SUMMARY_CHARS],
    )


# Room kept on each page of a record split over several pages, beyond what is measured exactly.
SPLIT_SLACK_CHARS = 200
# Below this many characters per page, a record is not split further: something else is wrong.
MIN_PART_CHARS = 2_000


def _fixed_chars(page: Page | None, notes: str) -> int:
    """Characters of a page's body that are not the generated text: the markers and people's notes."""
    latest = page.latest_revision if page is not None else None
    return len(records.merge_generated(latest.body if latest else None, "", notes))


def _record_chunks(*, generated: str, week: str, main_fixed: int, part_fixed: int) -> list[str]:
    """The generated text of a week's record cut to fit the archive's pages: one chunk per page, in order."""
    limit = pages.MAX_BODY_CHARS
    if main_fixed + len(generated.strip()) <= limit:
        return [generated]
    parts = 2
    while True:
        contents = len(records.decision_record_parts_list(week=week, parts=parts))
        intro = max(
            len(records.decision_record_part_intro(week=week, part=part, parts=parts)) for part in range(2, parts + 1)
        )
        first = limit - main_fixed - contents - SPLIT_SLACK_CHARS
        rest = limit - part_fixed - intro - SPLIT_SLACK_CHARS
        if min(first, rest) < MIN_PART_CHARS:
            raise ValidationError(
                _("An archive page (%(limit)d characters) leaves too little room for the decision record of week "
                  "%(week)s beside the notes on it; shorten the notes first.") % {"limit": limit, "week": week}
            )
        chunks = records.split_generated(generated, first=first, rest=rest)
        if len(chunks) <= parts:
            return chunks
        parts = len(chunks)


def _sync_parts(*, week: str, chunks: list[str], pages_before: int, summary: str) -> None:
    """Write parts 2… of a week's record from its chunks; later parts (up to `pages_before`) say they are unused."""
    for part in range(2, max(len(chunks), pages_before) + 1):
        used = part <= len(chunks)
        title = (
            _("Decision record %(week)s, part %(n)d of %(total)d")
            if used
            else _("Decision record %(week)s, part %(n)d (no longer used)")
        )
        if used:
            generated = records.decision_record_part_intro(week=week, part=part, parts=len(chunks))
            generated += "\n\n" + chunks[part - 1]
        else:
            generated = records.decision_record_part_unused(week=week)
        _sync(
            source_key=f"cycle:{week}:part:{part}",
            slug=records.decision_record_part_slug(week, part),
            kind=PageKind.DECISION_RECORD,
            title=title % {"week": week, "n": part, "total": len(chunks)},
            generated=generated,
            notes=records.decision_record_part_notes_placeholder(week=week),
            data={},
            summary=summary,
        )


# PageRevision.summary's length.
SUMMARY_MAX_CHARS = 300


def _summary_with_reason(summary: str, reason: str) -> str:
    """The revision's summary followed by why the record changed after the fact, cut to the summary's length."""
    reason = " ".join(reason.split())
    if not reason:
        return summary
    text = _("%(summary)s — %(reason)s") % {"summary": summary, "reason": reason}
    return text if len(text) <= SUMMARY_MAX_CHARS else text[: SUMMARY_MAX_CHARS - 1] + "…"


RECORD_TASK = "reports.write_decision_record"


def decision_record_enqueue(*, cycle: ReviewCycle, reason: str = "", published: bool = True) -> None:
    """Inside a finalize, publish, correction or appeal: ask for the week's record to be written after commit.

    Writes one outbox message (`reports.write_decision_record`, which calls `decision_record_sync` once), so the
    record is exactly as durable as the change: a published week always gets its record, even when the worker
    writing it dies (the relay hands the message over again). What the archive can tell now is checked now: when
    an address the record needs (its page or one of its parts) is held by another page, ValidationError, and the
    caller's transaction rolls back (nothing is finalized or published). Two queries whatever the week's size.
    """
    slug = records.decision_record_slug(cycle.week)
    taken = (
        Page.objects.filter(Q(slug=slug) | Q(slug__startswith=f"{slug}-part-"))
        .exclude(source_key__startswith=f"cycle:{cycle.week}")
        .values_list("slug", flat=True)
        .first()
    )
    if taken is not None:
        raise ValidationError(
            _("The archive address “%(slug)s” is taken by another page, so “%(title)s” cannot be written "
              "there; an operator has to move that page first.")
            % {"slug": taken, "title": records.decision_record_title(cycle.week)}
        )
    outbox_enqueue(
        task_name=RECORD_TASK,
        key=cycle_record_key(cycle=cycle),
        kwargs={"cycle_id": cycle.pk, "reason": reason, "published": published},
    )


@write_transaction
def decision_record_sync(*, cycle: ReviewCycle, reason: str = "", published: bool = True) -> PageRevision | None:
    """Write a week's decision record from the committee's records: generated at finalize, updated at publish.

    Creates `decision-record-<week>` (and the policy page of the cycle's rubric version, which the
    record links to) on first call; afterwards appends a revision when the generated part or the
    structured data changed, keeping committee members' notes outside the generated part. Returns
    the week page's new revision, or None when it did not change, so it is safe to call any number
    of times. `reason` (a correction's or an appeal's words) ends the revision's summary;
    `published` is False when the change published no new plan version (a correction before
    publish, an appeal filed or upheld), so the summary does not claim one.

    A record longer than an archive page holds (pages.MAX_BODY_CHARS) is split at line boundaries:
    the week's page keeps the beginning, the structured data and a link to each further part,
    `decision-record-<week>-part-<n>`, which holds the next stretch of the text. Parts that a
    shorter record no longer needs get a revision saying so. All of it happens in one transaction (the outbox
    task's, after the finalize or publish committed): the record is written whole or not at all. Pages are
    locked in id order before the chain head, the order every archive write keeps.

    The record is written in the default language (settings.LANGUAGE_CODE), whichever language the
    chair's click came in: the archive keeps one text, and readers of another language read it
    rendered from its data in theirs (reports.records.language).
    """
    with translation.override(settings.LANGUAGE_CODE):
        return _decision_record_write(cycle=cycle, reason=reason, published=published)


def _decision_record_write(*, cycle: ReviewCycle, reason: str, published: bool) -> PageRevision | None:
    key = f"cycle:{cycle.week}"
    part_prefix = f"{key}:part:"
    rubric = rubric_for_week(week=cycle.week)
    locked = {
        page.source_key or "": page
        for page in Page.objects.select_for_update(no_key=True)
        .filter(Q(source_key__in=[key, f"policy-change:{rubric.number}"]) | Q(source_key__startswith=part_prefix))
        .order_by("pk")
    }
    # The record links the version of the rules its rubric is (the store's change): that page exists.
    change = policy_version_1() if rubric.number == 1 else PolicyChange.objects.filter(number=rubric.number).first()
    if change is not None:
        policy_change_page_sync(change=change)
    data = selectors.decision_record_data(cycle=cycle)
    plan = data.get("plan")  # the plan's data, or None before one is published
    if cycle.status == CycleStatus.PUBLISHED and isinstance(plan, dict):
        summary = _("Updated: plan version %(v)d published") % {"v": plan["version"]}
    elif cycle.status == CycleStatus.FINALIZED:
        summary = _("Generated: week %(week)s finalized") % {"week": cycle.week}
    else:
        summary = _("Regenerated from the committee's records")
    if reason and not published:
        summary = _("Updated")
    summary = _summary_with_reason(summary, reason)
    notes = records.decision_record_notes_placeholder()
    part_notes = records.decision_record_part_notes_placeholder(week=cycle.week)
    existing_parts = {int(k.removeprefix(part_prefix)): page for k, page in locked.items() if k.startswith(part_prefix)}
    chunks = _record_chunks(
        generated=records.decision_record_markdown(data),
        week=cycle.week,
        main_fixed=_fixed_chars(locked.get(key), notes),
        part_fixed=max(_fixed_chars(page, part_notes) for page in [None, *existing_parts.values()]),
    )
    _sync_parts(week=cycle.week, chunks=chunks, pages_before=max(existing_parts, default=1), summary=summary)
    generated = chunks[0]
    if len(chunks) > 1:
        generated += "\n\n" + records.decision_record_parts_list(week=cycle.week, parts=len(chunks)) + "\n"
    return _sync(
        source_key=key,
        slug=records.decision_record_slug(cycle.week),
        kind=PageKind.DECISION_RECORD,
        title=records.decision_record_title(cycle.week),
        generated=generated,
        notes=notes,
        data=data,
        summary=summary,
    )

"""The dashboards' one write: a flagged month opens an archive page where the committee records its parameter review."""

from __future__ import annotations

from datetime import datetime

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from committee import selectors as committee_selectors
from reports import records
from reports.dashboards.monthly import DEFAULT_BASELINE_MONTHS, MonthlyReview, monthly_review
from reports.models import Page, PageKind
from reports.services.pages import page_append_system, page_create_system


def monthly_review_slug(month: str) -> str:
    return f"monthly-review-{month}"


def _markdown(review: MonthlyReview) -> str:
    header = [_("Pool"), _("Metric"), _("Value"), _("Baseline"), _("Off baseline"), _("Flagged")]
    rows = [
        [
            records.text(row.label),
            records.text(f"{metric.label} ({metric.unit})"),
            records.number(metric.value),
            records.number(metric.baseline),
            f"{records.number(metric.deviation_pct, 1)}%" if metric.deviation_pct is not None else "—",
            "**" + _("yes") + "**" if metric.flagged else _("no"),
        ]
        for row in review.rows
        for metric in row.metrics
    ]
    intro = _(
        "%(month)s%(to_date)s against the mean of %(baseline)s. A metric more than 10%% off its baseline is flagged."
    ) % {
        "month": review.month,
        "to_date": " " + _("(to date)") if review.to_date else "",
        "baseline": ", ".join(review.baseline_months),
    }
    flagged = [
        "- " + _("%(pool)s: %(metric)s %(value)s against %(baseline)s (%(dev)s%%)")
        % {
            "pool": records.text(row.label),
            "metric": records.text(metric.label.lower()),
            "value": records.number(metric.value),
            "baseline": records.number(metric.baseline),
            "dev": records.number(metric.deviation_pct, 1),
        }
        for row, metric in review.flags
    ]
    return "\n\n".join(
        [f"## {_('The month in numbers')}", intro, records.table(header, rows), f"### {_('Flagged')}",
         "\n".join(flagged) or _("Nothing.")]
    )


def _notes_placeholder() -> str:
    return "\n\n".join(
        [
            f"## {_('Parameter review')}",
            _(
                "_The committee records here what it reviewed (burst reserves, costs per GPU-hour, fair-share "
                "weights, the rubric), what it decided, and why. Edit this page to write it._"
            ),
        ]
    )


def monthly_review_page_open(
    *, actor: User, month: str, now: datetime, baseline_months: int = DEFAULT_BASELINE_MONTHS
) -> Page:
    """The archive page of a flagged month's parameter review, created or brought up to date, for the committee.

    The page `monthly-review-<YYYY-MM>` (kind policy, source `monthly-review:<YYYY-MM>`) holds a
    generated block with the month's figures, baselines and flags; what members write outside the
    block is kept when the figures are regenerated (reports.records.merge_generated). Idempotent:
    when the figures did not change, no revision is written. PermissionDenied outside the
    committee; ValidationError when nothing in the month is flagged (or the month is malformed).
    """
    if not committee_selectors.user_is_committee(user=actor):
        raise PermissionDenied(_("Only committee members record a parameter review."))
    try:
        review = monthly_review(month=month, now=now, baseline_months=baseline_months)
    except ValueError as exc:
        raise ValidationError(str(exc)) from None
    if not review.flagged:
        raise ValidationError(_("Nothing in %(month)s is off its baseline by more than 10%%.") % {"month": month})
    source_key = f"monthly-review:{month}"
    title = _("Monthly review %(month)s: parameters") % {"month": month}
    generated = _markdown(review)
    summary = ngettext("Figures of %(month)s with %(n)d flag", "Figures of %(month)s with %(n)d flags",
                       len(review.flags)) % {"month": month, "n": len(review.flags)}
    data = {"month": month, "flags": [[row.key, metric.key] for row, metric in review.flags]}

    def body_from(previous: str | None) -> str:
        return records.merge_generated(previous, generated, _notes_placeholder())

    page = Page.objects.filter(source_key=source_key).first()
    if page is None:
        try:
            return page_create_system(
                slug=monthly_review_slug(month), kind=PageKind.POLICY, source_key=source_key, title=title,
                body=body_from(None), data=data, summary=summary,
            )
        except IntegrityError:
            page = Page.objects.get(source_key=source_key)  # opened meanwhile by another member
    page_append_system(page=page, title=title, data=data, summary=summary, body_from=body_from)
    page.refresh_from_db()
    return page

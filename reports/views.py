"""Archive pages. Views parse input, call one service or selector, render.

Everyone signed in reads every page; only committee members see and use the edit, create and
restore actions (the services refuse everyone else again). No view deletes anything.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from core.errors import RoleRequired, form_errors_add
from core.http import AuthenticatedHttpRequest
from reports import records, selectors, services
from reports.forms import (
    CompareForm,
    GeneratedPageEditForm,
    PageCreateForm,
    PageEditForm,
    PreviewForm,
    RestoreForm,
    SearchForm,
)
from reports.markdown import render as render_markdown
from reports.models import ExportStatus, Page, PageKind, PageRevision


def _render(request: HttpRequest, template: str, context: dict[str, Any], *, status: int = 200) -> HttpResponse:
    """Render an archive page: every one shows the chain's head so readers can keep it elsewhere."""
    context.setdefault("chain_head", selectors.chain_head())
    context.setdefault("can_edit", selectors.user_can_edit(user=request.user))
    return render(request, template, context, status=status)


def _html(request: HttpRequest, text: str) -> str:
    """A body as the page shows it: sanitized, links to pages that do not exist yet marked, requests the reader
    may not open (another team's) as plain text."""
    return render_markdown(text, existing_slugs=selectors.existing_slugs(text=text),
                           readable_requests=selectors.readable_requests(viewer=request.user, text=text))


def _revision_text(request: HttpRequest, revision: PageRevision) -> selectors.RevisionText:
    """The revision in the reader's language, or its archived text with ?text=archived."""
    return selectors.revision_text(revision=revision, archived=request.GET.get("text") == "archived")


def _require_editor(request: HttpRequest) -> None:
    if not selectors.user_can_edit(user=request.user):
        raise RoleRequired(
            _("Only committee members can edit the archive; everyone signed in reads it."),
            role=_("a seat on the committee"),
            elsewhere=[(_("The decision archive"), reverse("reports:index"))],
        )


# Pages listed on one page of the archive's index: about half a year of weekly records.
INDEX_PAGES = 30


@login_required
@require_GET
def index(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The archive's pages, newest change first, INDEX_PAGES a page, grouped by kind; the texts are not loaded."""
    listing = selectors.page_list(viewer=request.user, record_parts=False).defer(
        "latest_revision__body", "latest_revision__data"
    )
    page_obj = Paginator(listing, INDEX_PAGES).get_page(request.GET.get("page"))
    pages = list(page_obj)
    groups = [(label, [p for p in pages if p.kind == kind]) for kind, label in PageKind.choices]
    return _render(
        request,
        "reports/index.html",
        {
            "groups": groups,
            "recent": selectors.recent_changes(viewer=request.user),
            "search_form": SearchForm(),
            "page_obj": page_obj,
        },
    )


@login_required
@require_GET
def search(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = SearchForm(request.GET)
    query = form.cleaned_data["q"] if form.is_valid() else ""
    hits = selectors.page_search(viewer=request.user, query=query)
    request_hits = selectors.request_search(viewer=request.user, query=query)
    return _render(
        request,
        "reports/search.html",
        {"search_form": form, "query": query, "hits": hits, "request_hits": request_hits},
    )


@login_required
@require_GET
def chain(request: AuthenticatedHttpRequest) -> HttpResponse:
    return _render(request, "reports/chain.html", {})


@login_required
@require_GET
def page_detail(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    try:
        page = selectors.page_get(viewer=request.user, slug=slug)
    except Http404:
        # A wiki link's target that nobody wrote yet: say so, and offer the committee to write it.
        return _render(request, "reports/page_missing.html", {"slug": slug}, status=404)
    revision = selectors.revision_latest(page=page)
    text = _revision_text(request, revision)
    return _render(
        request,
        "reports/page_detail.html",
        {
            "page": page,
            "revision": revision,
            "text": text,
            "is_latest": True,
            "html": _html(request, text.body),
            "backlinks": selectors.backlinks(page=page),
            "charts": selectors.revision_charts(revision=revision),
            "export": selectors.export_for_revision(revision=revision),
        },
    )


@login_required
@require_GET
def revision_detail(request: AuthenticatedHttpRequest, slug: str, number: int) -> HttpResponse:
    """The permalink of one revision: its content as it was saved, forever (a decision record in the reader's
    language, rendered from the data it saved; ?text=archived shows the text exactly as saved)."""
    page = selectors.page_get(viewer=request.user, slug=slug)
    revision = selectors.revision_get(page=page, number=number)
    text = _revision_text(request, revision)
    return _render(
        request,
        "reports/page_detail.html",
        {
            "page": page,
            "revision": revision,
            "text": text,
            "is_latest": revision.pk == page.latest_revision_id,
            "html": _html(request, text.body),
            "restore_form": RestoreForm(initial={"base_revision_id": page.latest_revision_id}),
            "charts": selectors.revision_charts(revision=revision),
            "export": selectors.export_for_revision(revision=revision),
        },
    )


@login_required
@require_GET
def history(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    page = selectors.page_get(viewer=request.user, slug=slug)
    revisions = list(selectors.revision_list(page=page))
    return _render(request, "reports/history.html", {"page": page, "revisions": revisions})


@login_required
@require_GET
def compare(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    """Any two revisions side by side: ?old=<number>&new=<number> (either order)."""
    page = selectors.page_get(viewer=request.user, slug=slug)
    form = CompareForm(request.GET)
    if not form.is_valid():
        latest = selectors.revision_latest(page=page).number
        return redirect(f"{reverse('reports:compare', args=[page.slug])}?old={max(1, latest - 1)}&new={latest}")
    old_number, new_number = sorted((form.cleaned_data["old"], form.cleaned_data["new"]))
    old = selectors.revision_get(page=page, number=old_number)
    new = selectors.revision_get(page=page, number=new_number)
    return _render(
        request,
        "reports/compare.html",
        {"page": page, "old": old, "new": new, "diff": selectors.revision_compare(old=old, new=new)},
    )


def _conflict_context(page: Page, conflict: services.EditConflict, form: Any) -> dict[str, Any]:
    """What an editor sees when someone saved first: their text kept, and how it differs from the newer revision."""
    title = form.cleaned_data.get("title", "") if hasattr(form, "cleaned_data") else ""
    body = form.cleaned_data.get("body", "") if hasattr(form, "cleaned_data") else ""
    split = records.generated_split(conflict.latest.body)
    if isinstance(form, GeneratedPageEditForm) and split:
        # Compared whole: the editor's text around the newer revision's block, as saving it would store it.
        body = records.generated_join(above=form.cleaned_data.get("body_above", ""), block=split.block, below=body)
    base = (
        PageRevision.objects.filter(pk=conflict.base_revision_id, page=page).first()
        if conflict.base_revision_id is not None
        else None  # the editor started from no revision
    )
    data = form.data.copy()
    # The editor has now seen the newer revision: the next save is against it.
    data["base_revision_id"] = str(conflict.latest.pk)
    return {
        "form": type(form)(data),
        "conflict": conflict.latest,
        "conflict_diff": selectors.text_compare(old=conflict.latest, title=title, body=body),
        "meanwhile_diff": selectors.revision_compare(old=base, new=conflict.latest) if base else None,
        "base": base,
    }


def _save_edit(request: AuthenticatedHttpRequest, page: Page, form: PageEditForm) -> PageRevision:
    """A generated page's edit keeps its generated block (services.page_notes_save); any other is the whole text."""
    fields = {
        "actor": request.user,
        "page": page,
        "base_revision_id": form.cleaned_data["base_revision_id"],
        "title": form.cleaned_data["title"],
        "summary": form.cleaned_data["summary"],
    }
    if isinstance(form, GeneratedPageEditForm):
        return services.page_notes_save(
            above=form.cleaned_data["body_above"], below=form.cleaned_data["body"], **fields
        )
    return services.page_revision_save(body=form.cleaned_data["body"], **fields)


@login_required
@require_http_methods(["GET", "POST"])
def page_edit(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    """Edit a page. A generated one shows its generated block read-only and edits the text around it."""
    page = selectors.page_get(viewer=request.user, slug=slug)
    _require_editor(request)
    latest = selectors.revision_latest(page=page)
    split = records.generated_split(latest.body)
    form_class = GeneratedPageEditForm if split else PageEditForm
    context: dict[str, Any] = {"page": page, "latest": latest,
                               "generated_html": _html(request, split.block) if split else ""}
    if request.method == "POST":
        form = form_class(request.POST)
        if form.is_valid():
            try:
                revision = _save_edit(request, page, form)
            except services.EditConflict as conflict:
                context.update(_conflict_context(page, conflict, form))
                newer = records.generated_split(conflict.latest.body)
                context.update(latest=conflict.latest, generated_html=_html(request, newer.block) if newer else "")
                return _render(request, "reports/page_form.html", context, status=409)
            except ValidationError as exc:
                form_errors_add(form, exc)
            else:
                messages.success(request, _("Saved as revision %(n)d.") % {"n": revision.number})
                return redirect(page)
        context["form"] = form
        return _render(request, "reports/page_form.html", context, status=400)
    initial = {"title": latest.title, "body": latest.body, "base_revision_id": latest.pk, "summary": ""}
    if split:
        initial.update(body=split.below, body_above=split.above)
    context["form"] = form_class(initial=initial)
    return _render(request, "reports/page_form.html", context)


@login_required
@require_POST
def markdown_preview(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The editor's text rendered as the page will show it (the same Markdown and sanitizer), for htmx to swap in."""
    _require_editor(request)
    form = PreviewForm(request.POST)
    if not form.is_valid():
        return HttpResponse(_("The text is too long to preview."), status=400, content_type="text/plain")
    text = "\n\n".join(part for part in (form.cleaned_data["body_above"], form.cleaned_data["body"]) if part)
    return render(request, "reports/_preview.html", {"html": _html(request, text)})


@login_required
@require_http_methods(["GET", "POST"])
def page_create(request: AuthenticatedHttpRequest) -> HttpResponse:
    _require_editor(request)
    initial = {"summary": _("First version"), "slug": request.GET.get("slug", "")[:100]}
    form = PageCreateForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            page = services.page_create(
                actor=request.user,
                slug=form.cleaned_data["slug"],
                title=form.cleaned_data["title"],
                body=form.cleaned_data["body"],
                summary=form.cleaned_data["summary"],
            )
        except ValidationError as exc:
            form_errors_add(form, exc)
        else:
            messages.success(request, _("Page created."))
            return redirect(page)
    status = 400 if request.method == "POST" else 200
    return _render(request, "reports/page_form.html", {"form": form, "creating": True}, status=status)


@login_required
@require_POST
def revision_restore(request: AuthenticatedHttpRequest, slug: str, number: int) -> HttpResponse:
    page = selectors.page_get(viewer=request.user, slug=slug)
    _require_editor(request)
    revision = selectors.revision_get(page=page, number=number)
    form = RestoreForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("The restore form was incomplete; nothing changed."))
        return redirect(revision)
    try:
        restored = services.page_revision_restore(
            actor=request.user,
            page=page,
            number=number,
            base_revision_id=form.cleaned_data["base_revision_id"],
            summary=form.cleaned_data["summary"],
        )
    except services.EditConflict as conflict:
        messages.error(
            request,
            _("Someone saved revision %(n)d while you were looking; nothing was restored. Check it, then try again.")
            % {"n": conflict.latest.number},
        )
        return redirect(reverse("reports:compare", args=[page.slug]) + f"?old={number}&new={conflict.latest.number}")
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect(revision)
    messages.success(
        request, _("Revision %(old)d restored as revision %(new)d.") % {"old": number, "new": restored.number}
    )
    return redirect(page)


@login_required
@require_POST
def revision_pdf(request: AuthenticatedHttpRequest, slug: str, number: int) -> HttpResponse:
    """Ask for the PDF of a revision; the work happens in a Celery task, this page follows its progress."""
    page = selectors.page_get(viewer=request.user, slug=slug)
    revision = selectors.revision_get(page=page, number=number)
    export = services.pdf_export_request(actor=request.user, revision=revision)
    return redirect("reports:export", pk=export.pk)


@login_required
@require_GET
def export_detail(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    export = selectors.export_get(viewer=request.user, pk=pk)
    return _render(request, "reports/export_detail.html", {"export": export, "page": export.revision.page})


@login_required
@require_GET
def export_progress(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """The progress fragment htmx polls every second until the file is ready or the task failed."""
    export = selectors.export_get(viewer=request.user, pk=pk)
    # The fragment replaces the polling element; once done or failed it has no trigger, so polling stops.
    return render(request, "reports/_export_progress.html", {"export": export})


@login_required
@require_GET
def export_download(request: AuthenticatedHttpRequest, pk: int) -> FileResponse:
    export = selectors.export_get(viewer=request.user, pk=pk)
    path = selectors.pdf_export_path(export=export)
    if export.status != ExportStatus.DONE or path is None or not path.is_file():
        raise Http404(_("This PDF is not ready."))
    return FileResponse(path.open("rb"), as_attachment=True, filename=export.file_name, content_type="application/pdf")

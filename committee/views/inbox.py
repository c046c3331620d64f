"""The in-app inbox: what a person has been told, newest first, beside the daily digest that emails it."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_POST

from committee import selectors, services
from committee.services.notifications import kind_heading, notification_text
from core.http import AuthenticatedHttpRequest
from core.parsers import parse_whole_number

INBOX_PAGE_SIZE = 25


@login_required
@require_GET
def inbox(request: AuthenticatedHttpRequest) -> HttpResponse:
    page = Paginator(selectors.inbox_list(user=request.user), INBOX_PAGE_SIZE).get_page(request.GET.get("page"))
    items = [
        {
            "notification": n,
            "heading": kind_heading(n.kind),
            "text": notification_text(n),
            "path": n.params.get("path") or "",
            "unread": n.read_at is None,
        }
        for n in page
    ]
    return render(
        request,
        "committee/inbox.html",
        {
            "page_obj": page,
            "items": items,
            # "Mark all read" marks what this page was drawn with: a notification recorded since stays unread.
            "newest_id": max((n.pk for n in page), default=None) if page.number == 1 else None,
            "unread": selectors.inbox_unread_count(user=request.user),
        },
    )


@login_required
@require_POST
def inbox_mark_read(request: AuthenticatedHttpRequest) -> HttpResponse:
    raw_up_to, raw_id = request.POST.get("up_to", ""), request.POST.get("id", "")
    up_to, one = parse_whole_number(raw_up_to), parse_whole_number(raw_id)
    if up_to is not None:
        count = services.notifications_mark_read(user=request.user, up_to_id=up_to)
    elif one is not None:
        count = services.notifications_mark_read(user=request.user, ids=[one])
    else:
        return HttpResponseBadRequest(_("Say which notifications to mark read."))
    if count:
        done = ngettext("%(n)d notification marked read.", "%(n)d notifications marked read.", count)
        messages.success(request, done % {"n": count})
    return redirect("committee:inbox")

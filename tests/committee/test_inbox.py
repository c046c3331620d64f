"""The in-app inbox: every notification a person was told, newest first, a badge of the unread in the navigation,
marked read one by one or all at once (never someone else's, never one that arrived after the page was drawn)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.urls import reverse

from committee import services
from committee.models import Notification, NotificationKind

pytestmark = pytest.mark.django_db


def tell(user: Any, key: str, **params: Any) -> Notification:
    services.notifications_record(
        recipient_ids=[user.pk], kind=NotificationKind.REQUEST_SUBMITTED, key=key,
        params={"team": "Team A", "title": key, "week": "2026-W50", "by": "Lead A", "path": "/requests/1/", **params},
    )
    return Notification.objects.get(recipient=user, key=key)


def badge(client: Any) -> str:
    page = client.get(reverse("committee:portal")).content.decode()
    start = page.index('class="inbox-link"')
    return page[start:page.index("</a>", start)]


def test_the_badge_counts_unread_and_the_inbox_lists_newest_first(world: Any, client: Any, pinned: Any) -> None:
    tell(world.lead_a, "Ranker retrain")
    pinned.shift(timedelta(minutes=5))
    tell(world.lead_a, "Vision model")
    tell(world.member_b, "Not yours")
    client.force_login(world.lead_a)
    assert '<span class="badge"' in badge(client) and ">2</span>" in badge(client)
    page = client.get(reverse("committee:inbox")).content.decode()
    assert page.index("Vision model") < page.index("Ranker retrain")
    assert "Not yours" not in page
    assert 'href="/requests/1/"' in page  # each links to what it is about


def test_mark_all_read_leaves_a_notification_that_arrived_after_the_page(world: Any, client: Any) -> None:
    first = tell(world.lead_a, "Ranker retrain")
    client.force_login(world.lead_a)
    assert client.get(reverse("committee:inbox")).context["newest_id"] == first.pk
    later = tell(world.lead_a, "Vision model")  # recorded while the person was reading
    response = client.post(reverse("committee:inbox-read"), {"up_to": first.pk}, follow=True)
    assert "1 notification marked read." in response.content.decode()
    first.refresh_from_db()
    later.refresh_from_db()
    assert first.read_at is not None and later.read_at is None
    assert ">1</span>" in badge(client)


def test_one_is_marked_read_and_another_persons_never(world: Any, client: Any) -> None:
    mine = tell(world.lead_a, "Ranker retrain")
    theirs = tell(world.member_b, "Vision model")
    client.force_login(world.lead_a)
    client.post(reverse("committee:inbox-read"), {"id": theirs.pk})
    client.post(reverse("committee:inbox-read"), {"up_to": theirs.pk + 10})
    theirs.refresh_from_db()
    assert theirs.read_at is None
    mine.refresh_from_db()
    assert mine.read_at is not None
    assert '<span class="badge"' not in badge(client)


def test_a_mark_read_without_saying_which_is_refused_and_changes_nothing(world: Any, client: Any) -> None:
    mine = tell(world.lead_a, "Ranker retrain")
    client.force_login(world.lead_a)
    for data in ({}, {"up_to": "all"}, {"id": "-1"}):
        response = client.post(reverse("committee:inbox-read"), data)
        assert response.status_code == 400
        assert "Say which notifications" in response.content.decode()
    mine.refresh_from_db()
    assert mine.read_at is None


def test_an_opted_out_kind_still_reaches_the_inbox(world: Any, client: Any) -> None:
    services.notification_preferences_set(user=world.lead_a, receive=[], kinds=[NotificationKind.REQUEST_SUBMITTED])
    tell(world.lead_a, "Ranker retrain")
    client.force_login(world.lead_a)
    assert "Ranker retrain" in client.get(reverse("committee:inbox")).content.decode()


def test_the_inbox_pages_and_needs_a_sign_in(world: Any, client: Any) -> None:
    assert client.get(reverse("committee:inbox")).status_code == 302
    for i in range(30):
        tell(world.lead_a, f"Request {i:02d}")
    client.force_login(world.lead_a)
    first = client.get(reverse("committee:inbox"))
    assert len(first.context["items"]) == 25
    second = client.get(reverse("committee:inbox") + "?page=2")
    assert len(second.context["items"]) == 5
    assert second.context["newest_id"] is None  # "mark all read" is offered on the newest page only

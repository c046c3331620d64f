"""Lifecycle events as signed webhooks: a real HTTP receiver started by the test gets each event once, signed.

The receiver is a stdlib HTTP server on a free port of 127.0.0.1 that answers the statuses a test gives it (200
once they run out) and records every POST: headers and body. Tasks run eagerly through the outbox after the commit
of the change (or the clock's tick) that asked for them.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from allocations import selectors as allocation_selectors
from allocations.models import ElasticAction
from committee import services
from committee.models import (
    DeliveryState,
    LifecycleEvent,
    Notification,
    NotificationKind,
    WebhookDelivery,
    WebhookSubscription,
)
from committee.services.notifications import notification_text
from committee.services.webhooks import backoff
from tests.committee.contended import contended_week


class Receiver:
    """Records each POST (headers, body); answers the next of `statuses`, then 200."""

    def __init__(self) -> None:
        self.posts: list[tuple[dict[str, str], bytes, int]] = []
        self.statuses: list[int] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                receiver.posts.append((dict(self.headers.items()), body, status))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/events"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def accepted(self) -> list[dict[str, Any]]:
        return [json.loads(body) for _headers, body, status in self.posts if status == 200]


@pytest.fixture
def receiver(settings) -> Iterator[Receiver]:
    settings.DOCKET_WEBHOOK_PRIVATE_ADDRESSES = True  # the receiver listens on 127.0.0.1
    hook = Receiver()
    hook.thread.start()
    try:
        yield hook
    finally:
        hook.server.shutdown()
        hook.server.server_close()


@pytest.fixture
def week(world):
    return contended_week(world)


def _windows(world, week):
    plan = allocation_selectors.plan_for_week(week=world.cycle.week)
    assert plan is not None
    by_ref = {w.request_ref: w for w in allocation_selectors.plan_window_list(plan=plan)}
    return by_ref[week.placed.pk], by_ref[week.shortened.pk]


def _tick(clock, now, capture):
    """The clock's tick at `now`, with the tasks it hands to the outbox run at the same instant."""
    clock.move_to(now, tick=False)
    with capture(execute=True):
        services.clock_tick(now=now)


def test_each_event_reaches_the_subscriber_once_signed_as_a_cloudevent(world, week, receiver, clock,
                                                                      django_capture_on_commit_callbacks):
    subscription, secret = services.webhook_subscription_create(actor=world.lead_a, team=world.team_a,
                                                                url=receiver.url)
    placed, _shortened = _windows(world, week)

    _tick(clock, placed.start + timedelta(minutes=1), django_capture_on_commit_callbacks)
    _tick(clock, placed.start + timedelta(minutes=2), django_capture_on_commit_callbacks)  # again: nothing new
    _tick(clock, placed.end - timedelta(minutes=59), django_capture_on_commit_callbacks)

    assert [post["type"] for post in receiver.accepted()] == ["org.docket.window.started", "org.docket.window.ending"]
    for headers, body, _status in receiver.posts:
        assert headers["Content-Type"] == "application/cloudevents+json; charset=utf-8"
        expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        assert hmac.compare_digest(headers["Docket-Signature"], expected)
    started, ending = receiver.accepted()
    assert started["specversion"] == "1.0" and started["id"] != ending["id"]
    assert started["subject"] == f"requests/{week.placed.pk}" and started["time"].endswith("Z")
    assert (started["data"]["team"], started["data"]["gpu_count"], started["data"]["pool"]) == ("team-a", 40,
                                                                                                 "atlas/a100")
    assert ending["data"]["notice_hours"] == 1
    assert {d.state for d in WebhookDelivery.objects.filter(subscription=subscription)} == {DeliveryState.DELIVERED}
    # Team B's window started too: its team is told in its inbox, and nobody subscribed to it gets a post.
    assert LifecycleEvent.objects.filter(team=world.team_b, type="window.started").count() == 1
    first = Notification.objects.filter(recipient=world.member_b, kind=NotificationKind.WINDOW_EVENT).order_by("id")[0]
    line = notification_text(first)
    assert line.startswith("Team B: the window of R-") and "started" in line and "6 A100" in line


def test_a_receiver_that_fails_then_recovers_gets_the_event_by_retry_once(world, week, receiver, clock,
                                                                         django_capture_on_commit_callbacks):
    subscription, _secret = services.webhook_subscription_create(actor=world.chair, cluster=world.atlas,
                                                                 url=receiver.url)
    receiver.statuses = [500, 503]
    placed, shortened = _windows(world, week)
    start = placed.start + timedelta(minutes=1)
    _tick(clock, start, django_capture_on_commit_callbacks)  # both windows are on atlas: two events, refused
    deliveries = list(WebhookDelivery.objects.filter(subscription=subscription))
    assert len(deliveries) == 2 and {d.state for d in deliveries} == {DeliveryState.PENDING}
    assert all(d.next_attempt_at == start + backoff(1) for d in deliveries)

    _tick(clock, start + timedelta(seconds=10), django_capture_on_commit_callbacks)  # not due yet: no post
    assert len(receiver.posts) == 2
    _tick(clock, start + backoff(1), django_capture_on_commit_callbacks)
    _tick(clock, start + backoff(1) + timedelta(minutes=5), django_capture_on_commit_callbacks)

    ids = [post["id"] for post in receiver.accepted()]
    assert sorted(ids) == sorted({json.loads(body)["id"] for _h, body, _s in receiver.posts})  # each once
    assert {post["data"]["request_id"] for post in receiver.accepted()} == {placed.request_ref,
                                                                            shortened.request_ref}
    for delivery in WebhookDelivery.objects.filter(subscription=subscription):
        attempts = list(delivery.attempt_log.order_by("number"))
        assert [a.status_code for a in attempts] in ([500, 200], [503, 200])
        assert delivery.state == DeliveryState.DELIVERED and delivery.attempts == 2


def test_a_missed_tick_still_sends_the_start_at_the_next_one(world, week, receiver, clock,
                                                            django_capture_on_commit_callbacks):
    services.webhook_subscription_create(actor=world.lead_a, team=world.team_a, url=receiver.url)
    placed, _shortened = _windows(world, week)
    late = placed.start + timedelta(hours=5, minutes=42)  # beat was down from before the start until now
    _tick(clock, late, django_capture_on_commit_callbacks)
    assert [post["type"] for post in receiver.accepted()] == ["org.docket.window.started"]
    assert receiver.accepted()[0]["time"] == placed.start.isoformat().replace("+00:00", "Z")


def test_a_release_goes_out_as_an_event(world, week, receiver, django_capture_on_commit_callbacks):
    services.webhook_subscription_create(actor=world.lead_a, team=world.team_a, url=receiver.url)
    with django_capture_on_commit_callbacks(execute=True):
        services.window_release(actor=world.lead_a, gpu_request=week.placed, gpu_count=20, reason="Done.")
    [event] = receiver.accepted()
    assert event["type"] == "org.docket.window.released"
    assert (event["data"]["released_gpu_count"], event["data"]["kept_gpu_count"], event["data"]["reason"]) == (
        20, 20, "Done.")


@pytest.mark.parametrize(
    ("persona", "kwargs", "error"),
    [
        ("member_a", {"team": "team_a", "url": "https://hooks.example.org/x"}, PermissionDenied),
        ("lead_a", {"team": "team_b", "url": "https://hooks.example.org/x"}, PermissionDenied),
        ("lead_a", {"cluster": "atlas", "url": "https://hooks.example.org/x"}, PermissionDenied),
        ("lead_a", {"team": "team_a", "url": "ftp://hooks.example.org/x"}, ValidationError),
        ("lead_a", {"team": "team_a", "url": "not a url"}, ValidationError),
        ("chair", {"team": "team_a", "cluster": "atlas", "url": "https://hooks.example.org/x"}, ValidationError),
        ("chair", {"url": "https://hooks.example.org/x"}, ValidationError),
    ],
)
def test_a_subscription_is_refused_to_others_and_for_bad_input(world, persona, kwargs, error):
    resolved = {key: getattr(world, value) if key in ("team", "cluster") else value for key, value in kwargs.items()}
    with pytest.raises(error):
        services.webhook_subscription_create(actor=getattr(world, persona), **resolved)
    assert not WebhookSubscription.objects.exists()


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/x", "https://10.1.2.3/x", "http://[::1]/x",
                                 "http://169.254.169.254/latest/meta-data/"])
def test_a_receiver_on_a_private_address_is_refused_by_default(world, settings, url):
    settings.DOCKET_WEBHOOK_PRIVATE_ADDRESSES = False
    with pytest.raises(ValidationError) as refused:
        services.webhook_subscription_create(actor=world.lead_a, team=world.team_a, url=url)
    assert "private or reserved address" in " ".join(refused.value.messages)
    assert not WebhookSubscription.objects.exists()


def test_a_delivery_to_a_host_that_turned_private_fails_without_posting(world, week, receiver, settings,
                                                                       django_capture_on_commit_callbacks):
    services.webhook_subscription_create(actor=world.lead_a, team=world.team_a, url=receiver.url)
    settings.DOCKET_WEBHOOK_PRIVATE_ADDRESSES = False
    with django_capture_on_commit_callbacks(execute=True):
        services.window_release(actor=world.lead_a, gpu_request=week.placed, gpu_count=20)
    assert receiver.posts == []
    [delivery] = WebhookDelivery.objects.all()
    [attempt] = delivery.attempt_log.all()
    assert delivery.state == DeliveryState.PENDING and attempt.status_code is None
    assert "private or reserved address" in attempt.error


def test_an_idle_window_is_told_once_per_idle_episode_and_made_up_after_a_missed_tick(
        world, receiver, clock, django_capture_on_commit_callbacks):
    from allocations.elastic.services import elastic_evaluate
    from tests.allocations.plans import W, publish
    from tests.allocations.test_elastic_actions import usage
    from tests.clock import FIXED_NOW as NOW
    from tests.elastic_policy import elastic_version_one_as_migrated

    elastic_version_one_as_migrated()  # idle: under 25% for 240 minutes
    services.webhook_subscription_create(actor=world.lead_a, team=world.team_a, url=receiver.url)
    window = publish([W(world.a100, world.team_a, 8, 0, 160, ref=1, tier="priority")]).windows.get()
    hour = timedelta(hours=1)

    def idle_posts():
        return [post for post in receiver.accepted() if post["type"] == "org.docket.window.idle"]

    usage(window, util=[10, 20, 20, 10])  # the four hours before Wednesday 10:00
    _tick(clock, NOW + timedelta(minutes=15), django_capture_on_commit_callbacks)  # the evaluation: told at once
    [told] = idle_posts()
    assert told["subject"] == "requests/1" and told["time"] == "2026-12-02T10:15:00Z"
    assert {k: told["data"][k] for k in ("window_id", "utilization_pct", "threshold_pct", "idle_span_minutes",
                                         "offered_gpu_count", "idle_since")} == {
        "window_id": window.pk, "utilization_pct": 15.0, "threshold_pct": 25, "idle_span_minutes": 240,
        "offered_gpu_count": 6, "idle_since": "2026-12-02T06:00:00+00:00"}
    line = notification_text(Notification.objects.get(recipient=world.member_a, kind=NotificationKind.WINDOW_EVENT))
    assert line.startswith("Team A: the window of R-1 has been idle since ") and "15.0% of GPU time busy" in line

    # Still idle an hour later, now with 7 GPUs offered: the evaluation starts its action again, the episode goes on.
    usage(window, util=[0], until=NOW + hour, hours=1)
    _tick(clock, NOW + hour + timedelta(minutes=15), django_capture_on_commit_callbacks)
    assert ElasticAction.objects.filter(window=window).count() == 2 and len(idle_posts()) == 1

    # Its use rises (the episode ends); four idle hours later a second episode is told, once, by the next :00 tick
    # although the evaluation ran without the clock (its task; or the tick failed after it).
    usage(window, util=[80], until=NOW + 2 * hour, hours=1)
    _tick(clock, NOW + 2 * hour + timedelta(minutes=15), django_capture_on_commit_callbacks)
    usage(window, util=[5, 5, 5, 5], until=NOW + 6 * hour, hours=4)
    elastic_evaluate(now=NOW + 6 * hour + timedelta(minutes=15))
    assert len(idle_posts()) == 1
    _tick(clock, NOW + 7 * hour, django_capture_on_commit_callbacks)
    _tick(clock, NOW + 7 * hour + timedelta(minutes=20), django_capture_on_commit_callbacks)
    assert [post["time"] for post in idle_posts()] == ["2026-12-02T10:15:00Z", "2026-12-02T16:15:00Z"]
    assert LifecycleEvent.objects.filter(type="window.idle").count() == 2

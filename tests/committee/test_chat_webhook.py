"""The chat channel: Slack-compatible webhook posts for intake closing, publishing and failed syncs.

The webhook is a real HTTP server on 127.0.0.1 that the test starts and that records each post;
tasks run eagerly through the outbox, after the commit of the change that asked for them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from committee import services, weeks
from committee.models import OutboxMessage
from committee.outbox import outbox_relay
from committee.services.chat import ChatDeliveryError, chat_post
from tests.allocations.plans import W, bearer, publish, token_for
from tests.committee.reviewing import close, decide, score
from tests.factories import file_request


class Webhook:
    """Records each JSON body posted; answers `status` (200 unless a test says otherwise)."""

    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []
        self.status = 200
        webhook = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if webhook.status == 200:
                    webhook.posts.append(json.loads(body))
                self.send_response(webhook.status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/docket"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def texts(self) -> list[str]:
        return [post["text"] for post in self.posts]


@pytest.fixture
def webhook(settings) -> Iterator[Webhook]:
    hook = Webhook()
    hook.thread.start()
    settings.DOCKET_CHAT_WEBHOOK_URL = hook.url
    settings.DOCKET_CHAT_TIMEOUT = 5
    try:
        yield hook
    finally:
        hook.server.shutdown()
        hook.server.server_close()


def test_intake_closing_is_announced_once_within_the_last_24_hours(world, webhook, django_capture_on_commit_callbacks):
    file_request(world, title="Ranker retrain")
    closes = world.cycle.intake_closes_at

    with django_capture_on_commit_callbacks(execute=True):
        assert services.chat_intake_closing_announce(now=closes - timedelta(hours=25)) == []
    with django_capture_on_commit_callbacks(execute=True):
        assert services.chat_intake_closing_announce(now=closes - timedelta(hours=23)) == [world.cycle.week]
    with django_capture_on_commit_callbacks(execute=True):
        services.chat_intake_closing_announce(now=closes - timedelta(hours=1))  # the next hour's run
    with django_capture_on_commit_callbacks(execute=True):
        assert services.chat_intake_closing_announce(now=closes) == []  # closed: nothing to announce

    (text,) = webhook.texts
    assert text.startswith(f"Intake for week {world.cycle.week} closes ")
    assert "1 request submitted" in text and text.endswith("/requests/")


def test_a_publish_is_announced_with_its_plan_version(world, webhook, django_capture_on_commit_callbacks):
    request = file_request(world, title="Ranker retrain", gpu_count=16, min_gpu_count=8)
    close(world)
    for member in (world.chair, world.reviewer, world.finance):
        score(member, request, 9, 8, 9)
    decide(world, request)
    cycle = services.cycle_finalize(cycle=world.cycle, actor=world.chair)

    with django_capture_on_commit_callbacks(execute=True):
        services.cycle_publish(actor=world.chair, cycle=cycle)

    (text,) = webhook.texts
    assert text.startswith(f"Week {cycle.week}: the allocation is published (plan version 1, 1 window).")
    assert text.endswith(f"/windows/?week={cycle.week}")


def test_a_window_that_fails_to_sync_is_announced_once(world, webhook, django_capture_on_commit_callbacks):
    plan = publish([W(world.a100, world.team_a, 16, 8, 120, ref=1)])
    window = plan.windows.get()
    api = APIClient()
    api.credentials(**bearer(token_for(world.atlas, "slurm-sync")))

    def report(state: str, message: str) -> None:
        body = {"statuses": [{"window": window.pk, "state": state, "nodes_requested": 2, "nodes_reserved": 0,
                              "message": message}]}
        with django_capture_on_commit_callbacks(execute=True):
            assert api.post("/api/v1/windows/sync-status/", body, format="json").status_code == 200

    report("in_sync", "reserved")
    assert webhook.texts == []
    report("failed", "scontrol: error: Requested nodes are busy")
    report("failed", "scontrol: error: Requested nodes are busy")  # still failed: no second post

    (text,) = webhook.texts
    assert text.startswith(f"Window {window.pk} of Team A (16 GPUs on atlas/a100 from ")
    assert "failed to sync: scontrol: error: Requested nodes are busy" in text


def test_without_a_webhook_nothing_is_written_to_the_outbox(world, settings):
    settings.DOCKET_CHAT_WEBHOOK_URL = ""
    assert services.chat_intake_closing_announce(now=world.cycle.intake_closes_at - timedelta(hours=1)) == []
    assert not OutboxMessage.objects.filter(key__startswith="chat:").exists()


def test_a_refused_post_stays_in_the_outbox_and_is_posted_by_a_later_relay(
    world, webhook, django_capture_on_commit_callbacks
):
    webhook.status = 500
    with django_capture_on_commit_callbacks(execute=True):
        services.chat_intake_closing_announce(now=world.cycle.intake_closes_at - timedelta(hours=2))
    message = OutboxMessage.objects.get(key__startswith="chat:")
    assert message.done_at is None and "answered 500" in message.last_error

    webhook.status = 200
    outbox_relay(now=world.cycle.intake_closes_at + timedelta(hours=1))  # the relay job, after REDELIVER_AFTER

    message.refresh_from_db()
    assert message.done_at is not None
    assert len(webhook.texts) == 1


def test_an_unreachable_webhook_is_a_clear_error(settings):
    settings.DOCKET_CHAT_WEBHOOK_URL = "http://127.0.0.1:9/nothing-listens-here"
    with pytest.raises(ChatDeliveryError, match="could not be reached"):
        chat_post(text="hello")


def test_the_command_announces_as_of_the_moment_it_is_given(world, webhook):
    out = StringIO()
    closes = world.cycle.intake_closes_at.astimezone(weeks.committee_zone())
    call_command("chat_intake_closing", "--now", (closes - timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M"), stdout=out)
    assert f"Announced intake closing for {world.cycle.week}." in out.getvalue()
    assert OutboxMessage.objects.filter(key=f"chat:intake-closing:{world.cycle.week}").exists()

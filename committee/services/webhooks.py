"""Signed webhooks: lifecycle events posted to subscribers as CloudEvents, retried with backoff, each try logged.

A subscription belongs to a team (its lead creates it) or to a cluster (the chair). Every event of the team, or
of a window on the cluster, is one `WebhookDelivery` (committee/services/events.py), handed to the outbox; the
task `committee.webhook_deliver` runs `webhook_deliver`: one POST of the CloudEvent (1.0, structured mode, JSON)
with the header `Docket-Signature: sha256=<hex>`, the HMAC-SHA256 of the exact body with the subscription's
secret. A 2xx answer delivers it; anything else (an error status, a refused or timed-out connection) is logged as
an attempt and the delivery waits `BACKOFF` (doubling from 30 seconds up to 6 hours) for its next attempt, which
the clock's tick hands to the outbox again (`webhook_retries_enqueue`); after MAX_ATTEMPTS it is given up. The
body is the same on every attempt (the event's id included), so a receiver that got it twice can tell.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import secrets
import socket
import urllib.error
import urllib.parse
import urllib.request
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import URLValidator
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from allocations.models import Cluster, Team
from committee import selectors
from committee.models import (
    DeliveryState,
    LifecycleEvent,
    WebhookAttempt,
    WebhookDelivery,
    WebhookSubscription,
)
from committee.services.events import webhook_delivery_enqueue
from committee.services.requests import actor_name
from core.locks import write_transaction

SIGNATURE_HEADER = "Docket-Signature"
CONTENT_TYPE = "application/cloudevents+json; charset=utf-8"
TYPE_PREFIX = "org.docket."
MAX_ATTEMPTS = 10
TIMEOUT_SECONDS = 10


def backoff(attempts: int) -> timedelta:
    """How long a delivery waits after its `attempts`-th failed try: 30 s, 1 min, 2 min, ... at most 6 hours."""
    return min(timedelta(seconds=30) * 2 ** max(attempts - 1, 0), timedelta(hours=6))


def cloudevent_body(event: LifecycleEvent) -> bytes:
    """The event as a CloudEvent 1.0 in structured mode: the exact bytes posted and signed, the same every time."""
    envelope = {
        "specversion": "1.0",
        "id": str(event.event_id),
        "source": f"{settings.SITE_URL}/api/v1/teams/{event.data.get('team', '')}",
        "type": TYPE_PREFIX + event.type,
        "subject": f"requests/{event.request_ref}" if event.request_ref else "",
        "time": event.occurred_at.astimezone(UTC).isoformat().replace("+00:00", "Z"),
        "datacontenttype": "application/json",
        "data": event.data,
    }
    return json.dumps(envelope, sort_keys=True, separators=(",", ":")).encode()


def signature(*, secret: str, body: bytes) -> str:
    """The signature header's value: "sha256=" and the hex HMAC-SHA256 of `body` with `secret`."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def address_refusal(url: str) -> str:
    """Why Docket will not post to `url`'s host, or "": unless DOCKET_WEBHOOK_PRIVATE_ADDRESSES, a host that is or
    resolves to a loopback, private, link-local, multicast or reserved address is refused (and one that does not
    resolve)."""
    if settings.DOCKET_WEBHOOK_PRIVATE_ADDRESSES:
        return ""
    host = urllib.parse.urlsplit(url).hostname or ""
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return _("%(host)s does not resolve.") % {"host": host}
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if not address.is_global or address.is_multicast:
            return _("%(host)s is a private or reserved address: Docket posts only to public receivers.") % {
                "host": host}
    return ""


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int | None, str]:
    refusal = address_refusal(url)
    if refusal:
        return None, refusal
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)  # noqa: S310 (http(s), validated)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:  # noqa: S310
            response.read(1024)
            return response.status, ""
    except urllib.error.HTTPError as exc:
        return exc.code, f"answered {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        return None, f"could not be reached: {exc}"[:500]


def webhook_deliver(*, delivery_id: int, now: datetime | None = None) -> str:
    """One attempt of a pending delivery that is due: POST the signed CloudEvent and log what the receiver answered.

    Delivered on a 2xx; otherwise the next attempt waits `backoff(attempts)` (the clock hands it to the outbox
    again), or the delivery is given up after MAX_ATTEMPTS. A delivery that is not pending or not yet due is left
    alone, so a task that runs twice posts once. The row is locked for the POST (TIMEOUT_SECONDS at most): a
    second worker with the same delivery waits and then finds it done. Returns what happened, for the task's log.
    """
    now = now or timezone.now()
    with transaction.atomic():
        delivery = (
            WebhookDelivery.objects.select_for_update(of=("self",), no_key=True)
            .select_related("subscription", "event").filter(pk=delivery_id).first()
        )
        if delivery is None or delivery.state != DeliveryState.PENDING:
            return "not pending"
        if delivery.next_attempt_at is not None and delivery.next_attempt_at > now:
            return "not due"
        body = cloudevent_body(delivery.event)
        status, error = _post(delivery.subscription.url, body, {
            "Content-Type": CONTENT_TYPE,
            "User-Agent": "Docket",
            SIGNATURE_HEADER: signature(secret=delivery.subscription.secret, body=body),
        })
        delivery.attempts += 1
        ok = status is not None and 200 <= status < 300
        WebhookAttempt.objects.create(delivery=delivery, number=delivery.attempts, attempted_at=now,
                                      status_code=status, error="" if ok else (error or f"answered {status}"))
        if ok:
            delivery.state, delivery.delivered_at, delivery.next_attempt_at = DeliveryState.DELIVERED, now, None
        elif delivery.attempts >= MAX_ATTEMPTS:
            delivery.state, delivery.next_attempt_at = DeliveryState.FAILED, None
        else:
            delivery.next_attempt_at = now + backoff(delivery.attempts)
        delivery.save(update_fields=["state", "attempts", "delivered_at", "next_attempt_at"])
    return f"{delivery.state} after {delivery.attempts} attempts"


def webhook_retries_enqueue(*, now: datetime) -> int:
    """At every tick of the clock: hand each pending delivery whose next attempt is due to the outbox, once per
    attempt. A tick missed is made up at the next: the due deliveries are read from the database."""
    due = WebhookDelivery.objects.filter(state=DeliveryState.PENDING, next_attempt_at__lte=now, attempts__gt=0)
    count = 0
    with transaction.atomic():
        for delivery in due.order_by("id")[:500]:
            webhook_delivery_enqueue(delivery=delivery)
            count += 1
    return count


def _may_manage(*, actor: User, team: Team | None, cluster: Cluster | None) -> bool:
    if team is not None:
        return selectors.user_is_team_lead(user=actor, team=team)
    return selectors.user_is_chair(user=actor)


@write_transaction
def webhook_subscription_create(
    *, actor: User, url: str, team: Team | None = None, cluster: Cluster | None = None
) -> tuple[WebhookSubscription, str]:
    """Subscribe `url` to the lifecycle events of `team` (its lead) or of the windows on `cluster` (the chair).

    Returns the subscription and its signing secret, generated here (shown once: the pages and the API never
    show it again). Refused, nothing written: PermissionDenied for anyone else; ValidationError keyed `url` for an
    address that is not http(s), keyed `team` when neither or both of a team and a cluster are given.
    """
    if (team is None) == (cluster is None):
        raise ValidationError({"team": [_("Subscribe a team or a cluster, one of them.")]})
    if not _may_manage(actor=actor, team=team, cluster=cluster):
        raise PermissionDenied(_("Only the team's lead subscribes to its events; only the chair to a cluster's."))
    url = (url or "").strip()
    try:
        URLValidator(schemes=["http", "https"])(url)
    except ValidationError:
        raise ValidationError({"url": [_("Give the receiver's address, starting with https:// or http://.")]}) from None
    if len(url) > 500:
        raise ValidationError({"url": [_("At most 500 characters.")]})
    if refusal := address_refusal(url):
        raise ValidationError({"url": [refusal]})
    secret = secrets.token_hex(32)
    subscription = WebhookSubscription.objects.create(team=team, cluster=cluster, url=url, secret=secret,
                                                      created_by_name=actor_name(actor))
    return subscription, secret


@write_transaction
def webhook_subscription_deactivate(*, actor: User, subscription: WebhookSubscription) -> WebhookSubscription:
    """Stop posting to a subscription (its delivery log stays). The same people who may create it."""
    if not _may_manage(actor=actor, team=subscription.team, cluster=subscription.cluster):
        raise PermissionDenied(_("Only the team's lead manages its subscriptions; only the chair a cluster's."))
    subscription.active = False
    subscription.save(update_fields=["active"])
    WebhookDelivery.objects.filter(subscription=subscription, state=DeliveryState.PENDING).update(
        state=DeliveryState.FAILED, next_attempt_at=None
    )
    return subscription

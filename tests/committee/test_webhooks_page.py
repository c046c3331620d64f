"""The webhooks page: the lead subscribes its team, sees the secret once and the delivery log; others cannot."""

from __future__ import annotations

import pytest
from django.urls import reverse

from committee.models import WebhookSubscription
from tests.readable import assert_readable


@pytest.fixture(autouse=True)
def _any_receiver(settings):
    settings.DOCKET_WEBHOOK_PRIVATE_ADDRESSES = True  # hooks.example.org does not resolve here


def test_the_lead_subscribes_sees_the_secret_once_and_stops_it(client, world):
    client.force_login(world.lead_a)
    page = reverse("committee:webhooks")
    assert "Team Team A" in client.get(page).content.decode()  # the team it leads is offered
    response = client.post(page, {"target": "team:team-a", "url": "https://hooks.example.org/a"})
    html = response.content.decode()
    subscription = WebhookSubscription.objects.get()
    assert response.status_code == 200 and subscription.secret in html and 'id="webhook-secret"' in html
    assert_readable(html)
    again = client.get(page).content.decode()
    assert subscription.secret not in again and "https://hooks.example.org/a" in again and "Nothing delivered" in again
    client.post(reverse("committee:webhook-deactivate", args=[subscription.pk]))
    subscription.refresh_from_db()
    assert subscription.active is False


def test_a_member_is_offered_nothing_and_a_forged_post_is_refused(client, world):
    client.force_login(world.member_a)
    page = reverse("committee:webhooks")
    assert 'id="webhook-new"' not in client.get(page).content.decode()
    response = client.post(page, {"target": "team:team-a", "url": "https://hooks.example.org/a"})
    assert response.status_code == 400 and not WebhookSubscription.objects.exists()


def test_a_bad_address_is_shown_at_its_field(client, world):
    client.force_login(world.lead_a)
    response = client.post(reverse("committee:webhooks"), {"target": "team:team-a", "url": "ftp://x"})
    assert response.status_code == 400 and "starting with https://" in response.content.decode()
    assert not WebhookSubscription.objects.exists()

"""The webhooks API: a team's lead subscribes and reads its delivery log; the chair a cluster's; others are refused."""

from __future__ import annotations

import pytest

from committee import services
from committee.models import WebhookSubscription
from tests.committee.review_api import API, as_user


@pytest.fixture(autouse=True)
def _any_receiver(settings):
    settings.DOCKET_WEBHOOK_PRIVATE_ADDRESSES = True  # hooks.example.org does not resolve here


def test_the_lead_subscribes_gets_the_secret_once_and_reads_the_log(api, world):
    as_user(api, world.lead_a)
    created = api.post(f"{API}/webhooks/", {"team": "team-a", "url": "https://hooks.example.org/a"}, format="json")
    assert created.status_code == 201, created.json()
    body = created.json()
    assert (body["team"], body["cluster"], body["active"]) == ("team-a", None, True) and len(body["secret"]) == 64
    listed = api.get(f"{API}/webhooks/").json()
    assert [row["id"] for row in listed] == [body["id"]] and "secret" not in listed[0]
    assert api.get(f"{API}/webhooks/{body['id']}/deliveries/").json() == []
    stopped = api.post(f"{API}/webhooks/{body['id']}/deactivate/")
    assert stopped.status_code == 200 and stopped.json()["active"] is False
    as_user(api, world.member_b)
    assert api.get(f"{API}/webhooks/{body['id']}/deliveries/").status_code == 404


def test_the_chair_subscribes_a_cluster(api, world):
    as_user(api, world.chair)
    created = api.post(f"{API}/webhooks/", {"cluster": "atlas", "url": "https://hooks.example.org/c"}, format="json")
    assert created.status_code == 201 and created.json()["cluster"] == "atlas"


@pytest.mark.parametrize(
    ("persona", "body", "status"),
    [
        ("member_a", {"team": "team-a", "url": "https://hooks.example.org/a"}, 403),
        ("lead_a", {"team": "team-b", "url": "https://hooks.example.org/a"}, 403),
        ("lead_a", {"cluster": "atlas", "url": "https://hooks.example.org/a"}, 403),
        ("lead_a", {"team": "team-a", "url": "file:///etc/passwd"}, 400),
        ("lead_a", {"team": "no-such-team", "url": "https://hooks.example.org/a"}, 400),
        ("lead_a", {"url": "https://hooks.example.org/a"}, 400),
        ("lead_a", {"team": "team-a", "url": "https://hooks.example.org/a", "secret": "mine"}, 400),
    ],
)
def test_others_and_bad_input_are_refused_and_nothing_is_written(api, world, persona, body, status):
    as_user(api, getattr(world, persona))
    assert api.post(f"{API}/webhooks/", body, format="json").status_code == status
    assert not WebhookSubscription.objects.exists()


def test_the_list_takes_the_same_queries_for_one_and_for_fifty(api, world, django_assert_max_num_queries):
    as_user(api, world.lead_a)
    services.webhook_subscription_create(actor=world.lead_a, team=world.team_a, url="https://hooks.example.org/0")
    with django_assert_max_num_queries(12) as one:
        assert len(api.get(f"{API}/webhooks/").json()) == 1
    for n in range(49):
        services.webhook_subscription_create(actor=world.lead_a, team=world.team_a, url=f"https://h.example.org/{n}")
    with django_assert_max_num_queries(len(one.captured_queries)):
        assert len(api.get(f"{API}/webhooks/").json()) == 50

"""The policy lab's proposal dates in the reader's language, written through the one format layer (core.datetimes)."""

from __future__ import annotations

from django.test import Client
from django.urls import reverse

from policy.models import Proposal
from tests.conftest import World


def read(world: World, url: str, language: str) -> str:
    client = Client()
    client.force_login(world.member_a)
    response = client.get(url, HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200, url
    return response.content.decode()


def test_a_proposal_s_dates_read_in_each_language(world: World) -> None:
    proposal = Proposal.objects.create(title="Quorum 3", reason="r", expected_effect="e", proposer_name="Ada")
    proposal.comments.create(author_name="Bo", body="Fine by us.")
    detail, board = reverse("policy:proposal", args=[proposal.pk]), reverse("policy:board")
    # The tests' clock: Wednesday 2 December 2026, 10:00 UTC.
    assert "Proposed by Ada on Wed 2 Dec 2026" in read(world, detail, "en")
    assert "Bo · Wed 2 Dec 2026, 10:00 UTC" in read(world, detail, "en")
    assert "by Ada, Wed 2 Dec 2026" in read(world, board, "en")
    for page in (read(world, detail, "zh-hans"), read(world, board, "zh-hans")):
        assert "2026年12月2日（星期三）" in page
        assert "Dec 2026" not in page and "12月 2026" not in page
    assert "Bo · 2026年12月2日（星期三）10:00 UTC" in read(world, detail, "zh-hans")

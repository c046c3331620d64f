"""The meeting's information where it is used: the team's landing page, each review card, the queue page, and
the chair's list of decisions still missing."""

from __future__ import annotations

import re

from committee import services
from tests.committee.reviewing import close, decide, score, team_with_lead, two_requests_in_review
from tests.factories import file_request
from tests.readable import assert_readable


def test_an_open_question_is_first_on_the_teams_landing_page_until_it_is_answered(client, world):
    a, _b = two_requests_in_review(world)
    question = services.request_question_ask(actor=world.reviewer, gpu_request=a, body="Why 48 hours?")
    client.force_login(world.member_a)
    html = client.get("/requests/").content.decode()
    assert_readable(html)
    section = html[html.index('id="open-questions"'):]
    assert "The committee asks you 1 question" in section and "Why 48 hours?" in section
    assert f'href="/requests/{a.pk}/#question-{question.pk}"' in section
    client.force_login(world.member_b)  # another team: not theirs to answer
    assert 'id="open-questions"' not in client.get("/requests/").content.decode()
    services.request_question_answer(actor=world.lead_a, question=question, answer="The deadline is Friday.")
    client.force_login(world.member_a)
    assert 'id="open-questions"' not in client.get("/requests/").content.decode()


def test_each_review_card_offers_declare_a_conflict_outside_the_collapsed_panel(client, world):
    a, b = two_requests_in_review(world)
    client.force_login(world.finance)
    html = client.get(f"/review/{world.cycle.week}/").content.decode()
    for gpu_request in (a, b):
        card = html[html.index(f'id="request-{gpu_request.pk}"'):]
        card = card[:card.index("</article>")]
        panel = card[card.index('<details class="discussion-forms">'):card.index("</details>", card.index(
            '<details class="discussion-forms">'))]
        assert f'id="conflict-{gpu_request.pk}"' in card and f'id="conflict-{gpu_request.pk}"' not in panel
        assert "Declare conflict" in card


def test_the_queue_page_shows_what_the_card_shows(client, world):
    a, _b = two_requests_in_review(world)
    services.request_question_ask(actor=world.reviewer, gpu_request=a, body="Why 48 hours?")
    client.force_login(world.finance)
    html = client.get(f"/review/{world.cycle.week}/queue/{a.pk}/").content.decode()
    assert_readable(html)
    assert f'id="usage-compare-{a.pk}"' in html  # last week's usage, stated beside measured (and its flag)
    assert "Measured by the schedulers" in html
    assert "Fairness (computed)" in html
    assert "1 open question to the team" in html and "Why 48 hours?" in html


def test_the_review_names_each_decision_still_missing_and_its_page(client, world):
    rows = [file_request(world, team=team, actor=lead, title=f"Request {index}", gpu_count=4, min_gpu_count=2)
            for index, (team, lead) in enumerate(team_with_lead(world, f"Team {n}") for n in range(12))]
    close(world)
    for index, gpu_request in enumerate(rows):
        for member in (world.chair, world.reviewer):
            score(member, gpu_request, index % 11, 5, 5)
        if index % 3 == 0:
            decide(world, gpu_request, outcome="reject")
    client.force_login(world.chair)
    html = client.get(f"/review/{world.cycle.week}/").content.decode()
    hint = html[html.index('id="finalize-hint"'):]
    hint = hint[:hint.index("</div>")]
    links = re.findall(r'href="\?page=(\d+)#request-(\d+)"', hint)
    assert "8 ranked requests still need a decision" in hint
    assert len(links) == 8 and {page for page, _pk in links} == {"1", "2"}  # 12 cards, 10 a page
    for page, pk in links:  # each link leads to the page that holds that request's card and decision form
        target = client.get(f"/review/{world.cycle.week}/?page={page}").content.decode()
        assert f'id="request-{pk}"' in target

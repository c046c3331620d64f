"""The conversation around a request: the committee's own comments, and questions the team answers."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse

from committee import services
from committee.models import Notification, NotificationKind, QuestionStatus, RequestComment, RequestQuestion
from committee.services.notifications import notification_text
from tests.committee.reviewing import two_requests_in_review
from tests.factories import file_request


def review_url(world):
    return reverse("committee:review-cycle", args=[world.cycle.week])


def card(html: str, pk: int) -> str:
    start = html.index(f'id="request-{pk}"')
    return html[start:html.index("</article>", start)]


def test_a_committee_comment_is_shown_to_the_committee_and_never_to_the_team(world, client):
    a, _b = two_requests_in_review(world)
    client.force_login(world.reviewer)
    response = client.post(reverse("committee:review-comment", args=[world.cycle.week, a.pk]),
                           {"body": "Their usage last week was half of the grant."})
    assert response.status_code == 302 and response["Location"].endswith(f"#request-{a.pk}")
    client.force_login(world.finance)
    assert "Their usage last week was half of the grant." in card(client.get(review_url(world)).content.decode(), a.pk)
    for person in (world.lead_a, world.member_a, world.finance):  # the team, and the request page for anyone
        client.force_login(person)
        page = client.get(reverse("committee:request-detail", args=[a.pk])).content.decode()
        assert "half of the grant" not in page


def test_comments_that_cannot_be_made_store_nothing(world):
    a, b = two_requests_in_review(world)
    with pytest.raises(ValidationError) as exc:
        services.request_comment_add(actor=world.chair, gpu_request=a, body="   ")
    assert "body" in exc.value.message_dict
    with pytest.raises(ValidationError) as exc:
        services.request_comment_add(actor=world.chair, gpu_request=a, body="x" * 4001)
    assert "body" in exc.value.message_dict
    with pytest.raises(PermissionDenied, match="Only committee members"):
        services.request_comment_add(actor=world.lead_a, gpu_request=a, body="We are great.")
    with pytest.raises(PermissionDenied, match="member of Team B"):
        services.request_comment_add(actor=world.tech, gpu_request=b, body="Mine is great.")
    services.conflict_declare(actor=world.finance, gpu_request=a)
    with pytest.raises(PermissionDenied, match="recused"):
        services.request_comment_add(actor=world.finance, gpu_request=a, body="Between us.")
    assert not RequestComment.objects.exists()


def test_a_committee_member_in_the_team_does_not_see_the_comments_on_its_request(world, client):
    _a, b = two_requests_in_review(world)
    services.request_comment_add(actor=world.chair, gpu_request=b, body="Team B oversells its forecasts.")
    client.force_login(world.tech)  # on the committee, and in team B
    assert "oversells" not in card(client.get(review_url(world)).content.decode(), b.pk)
    client.force_login(world.reviewer)
    assert "oversells" in card(client.get(review_url(world)).content.decode(), b.pk)


def test_a_question_tells_the_team_which_answers_it_on_its_request_page(world, client):
    a, _b = two_requests_in_review(world)
    client.force_login(world.reviewer)
    client.post(reverse("committee:review-question", args=[world.cycle.week, a.pk]),
                {"body": "Would 12 GPUs do for the same deadline?"})
    question = RequestQuestion.objects.get()
    assert (question.status, question.asked_by_name) == (QuestionStatus.OPEN, "Reviewer")
    told = Notification.objects.filter(kind=NotificationKind.QUESTION_ASKED)
    assert {n.recipient.username for n in told} == {"lead_a", "member_a"}
    assert notification_text(told[0]) == (
        f"Reviewer of the committee asked Team A about “Ranker retrain” (week {world.cycle.week}): “Would 12 GPUs "
        "do for the same deadline?” Answer it on the request page."
    )
    assert "1 open question to the team" in card(client.get(review_url(world)).content.decode(), a.pk)

    client.force_login(world.member_a)
    page = client.get(reverse("committee:request-detail", args=[a.pk])).content.decode()
    assert "Would 12 GPUs do for the same deadline?" in page and 'name="answer"' in page
    response = client.post(reverse("committee:request-question-answer", args=[question.pk]),
                           {"answer": "Yes: the deadline holds with 12."})
    assert response.status_code == 302 and response["Location"].endswith(f"#question-{question.pk}")
    question.refresh_from_db()
    assert (question.status, question.answer, question.answered_by_name) == (
        QuestionStatus.ANSWERED, "Yes: the deadline holds with 12.", "Member_A")
    answered = Notification.objects.filter(kind=NotificationKind.QUESTION_ANSWERED)
    # The committee outside team A: the tech lead sits in team B, so is told too.
    assert {n.recipient.username for n in answered} == {"chair", "reviewer", "tech", "finance"}
    assert "Member_A of Team A answered the question on “Ranker retrain”" in notification_text(answered[0])

    client.force_login(world.reviewer)
    review = card(client.get(review_url(world)).content.decode(), a.pk)
    assert "Yes: the deadline holds with 12." in review and "open question" not in review


def test_a_member_of_another_team_cannot_answer_and_nothing_changes(world, client):
    a, _b = two_requests_in_review(world)
    question = services.request_question_ask(actor=world.chair, gpu_request=a, body="Why 48 hours?")
    client.force_login(world.member_b)
    assert client.get(reverse("committee:request-detail", args=[a.pk])).status_code == 404
    response = client.post(reverse("committee:request-question-answer", args=[question.pk]), {"answer": "Because."})
    assert response.status_code == 404
    with pytest.raises(PermissionDenied, match="Only members of Team A"):
        services.request_question_answer(actor=world.member_b, question=question, answer="Because.")
    client.force_login(world.chair)  # the committee reads the question but has no answer form
    page = client.get(reverse("committee:request-detail", args=[a.pk])).content.decode()
    assert "Why 48 hours?" in page and 'name="answer"' not in page
    assert client.post(reverse("committee:request-question-answer", args=[question.pk]),
                       {"answer": "Because."}).status_code == 404
    question.refresh_from_db()
    assert (question.status, question.answer) == (QuestionStatus.OPEN, "")
    assert not Notification.objects.filter(kind=NotificationKind.QUESTION_ANSWERED).exists()


def test_answers_and_questions_that_cannot_be_given_store_nothing(world, client):
    a, _b = two_requests_in_review(world)
    question = services.request_question_ask(actor=world.chair, gpu_request=a, body="Why 48 hours?")
    with pytest.raises(ValidationError) as exc:
        services.request_question_answer(actor=world.lead_a, question=question, answer="  ")
    assert "answer" in exc.value.message_dict
    client.force_login(world.lead_a)
    response = client.post(reverse("committee:request-question-answer", args=[question.pk]), {"answer": ""},
                           follow=True)
    assert "Write the answer." in response.content.decode()
    # A NUL character (which PostgreSQL cannot store) is refused with the form fields' words, not a 500.
    response = client.post(reverse("committee:request-question-answer", args=[question.pk]),
                           {"answer": "Two\x00 epochs."}, follow=True)
    assert response.status_code == 200 and "Null characters are not allowed." in response.content.decode()
    question.refresh_from_db()
    assert question.status == QuestionStatus.OPEN
    services.request_question_answer(actor=world.lead_a, question=question, answer="Two epochs.")
    with pytest.raises(ValidationError, match="already answered by Lead_A"):
        services.request_question_answer(actor=world.member_a, question=question, answer="Three.")
    question.refresh_from_db()
    assert question.answer == "Two epochs."
    with pytest.raises(ValidationError) as exc:
        services.request_question_ask(actor=world.chair, gpu_request=a, body="")
    assert "body" in exc.value.message_dict
    with pytest.raises(PermissionDenied):
        services.request_question_ask(actor=world.member_a, gpu_request=a, body="Self-serve?")
    assert RequestQuestion.objects.count() == 1


def test_a_draft_is_not_asked_about(world):
    draft = file_request(world, submit=False, title="Not yet")
    with pytest.raises(ValidationError, match="Only a submitted request"):
        services.request_question_ask(actor=world.chair, gpu_request=draft, body="Ready?")
    assert not RequestQuestion.objects.exists()
    assert not Notification.objects.filter(kind=NotificationKind.QUESTION_ASKED).exists()


def test_a_question_asked_from_a_later_page_of_cards_comes_back_to_that_page(world, client):
    import re

    from allocations.models import Team
    from committee.models import MembershipRole, TeamMembership
    from tests.committee.reviewing import close
    from tests.conftest import make_user

    for n in range(11):  # cards come ten a page
        team = Team.objects.create(name=f"Team {n:02d}", slug=f"team-{n:02d}")
        lead = make_user(f"lead-{n:02d}")
        TeamMembership.objects.create(user=lead, team=team, role=MembershipRole.LEAD)
        file_request(world, team=team, actor=lead, title=f"Request {n:02d}")
    close(world)
    client.force_login(world.reviewer)
    later = client.get(review_url(world) + "?page=2").content.decode()
    first_card = re.search(r'<article id="request-(\d+)" class="review-request">', later)
    assert first_card is not None
    pk = int(first_card.group(1))
    ask = reverse("committee:review-question", args=[world.cycle.week, pk])
    assert f'action="{ask}?page=2"' in later
    response = client.post(f"{ask}?page=2", {"body": "Would 8 GPUs do?"})
    assert response.status_code == 302 and response["Location"] == f"{review_url(world)}?page=2#request-{pk}"
    back = client.get(response["Location"]).content.decode()
    assert "Would 8 GPUs do?" in card(back, pk)
    # Anything else in the query is not carried back.
    response = client.post(f"{ask}?page=x&mine=all&next=https://elsewhere.example", {"body": "And 4?"})
    assert response["Location"] == f"{review_url(world)}#request-{pk}"

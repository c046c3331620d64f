"""The conversation around a request over the API: comments, questions and answers, conflicts, stale scores.

The same services as the review card and the request page (tests/committee/test_discussion.py and its
neighbours test the rules themselves); here, who may do what over /api/v1/, that a refused or invalid
call stores nothing, and that an answer reaches the member who asked.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from committee import services
from committee.models import (
    ConflictDeclaration,
    Notification,
    NotificationKind,
    QuestionStatus,
    RequestComment,
    RequestQuestion,
    Score,
    ScoreStaleness,
)
from committee.services.notifications import notification_text
from tests.committee.review_api import API, api_for, request_body
from tests.committee.reviewing import score, two_requests_in_review
from tests.factories import file_request

# --- committee comments ----------------------------------------------------------------------------


def test_a_committee_member_comments_and_the_committee_reads_it(world):
    a, _b = two_requests_in_review(world)
    response = api_for(world.reviewer).post(f"{API}/requests/{a.pk}/comments/",
                                            {"body": "Their usage last week was half of the grant."})
    assert response.status_code == 201, response.json()
    assert response.json()["author_name"] == "Reviewer" and response.json()["request_id"] == a.pk
    listed = api_for(world.finance).get(f"{API}/requests/{a.pk}/comments/")
    assert listed.status_code == 200
    assert [c["body"] for c in listed.json()] == ["Their usage last week was half of the grant."]


@pytest.mark.parametrize("who", ["lead_a", "member_a", "member_b", "outsider"])
def test_no_team_member_reads_or_writes_the_committees_comments(world, who):
    a, _b = two_requests_in_review(world)
    services.request_comment_add(actor=world.chair, gpu_request=a, body="Team A oversells its forecasts.")
    api = api_for(getattr(world, who))
    read = api.get(f"{API}/requests/{a.pk}/comments/")
    assert read.status_code == 403 and "oversells" not in read.content.decode()
    assert api.post(f"{API}/requests/{a.pk}/comments/", {"body": "We do not."}).status_code == 403
    assert RequestComment.objects.count() == 1


def test_a_committee_member_in_the_team_neither_reads_nor_writes_its_comments(world):
    _a, b = two_requests_in_review(world)
    services.request_comment_add(actor=world.chair, gpu_request=b, body="Team B oversells its forecasts.")
    api = api_for(world.tech)  # on the committee, and in team B
    read = api.get(f"{API}/requests/{b.pk}/comments/")
    assert read.status_code == 403 and "Team B" in read.json()["detail"] and "oversells" not in read.content.decode()
    wrote = api.post(f"{API}/requests/{b.pk}/comments/", {"body": "Mine is great."})
    assert wrote.status_code == 403 and "member of Team B" in wrote.json()["detail"]
    assert RequestComment.objects.count() == 1


def test_every_invalid_part_of_a_comment_is_told_at_once_and_nothing_is_stored(world):
    a, _b = two_requests_in_review(world)
    api = api_for(world.reviewer)
    response = api.post(f"{API}/requests/{a.pk}/comments/", {"body": "   ", "author_name": "The Board"})
    assert response.status_code == 400
    assert set(response.json()) == {"body", "author_name"}
    assert response.json()["author_name"] == ["This field cannot be set here."]
    too_long = api.post(f"{API}/requests/{a.pk}/comments/", {"body": "x" * 4001})
    assert too_long.status_code == 400 and list(too_long.json()) == ["body"]
    wrong_type = api.post(f"{API}/requests/{a.pk}/comments/", {"body": 7})
    assert wrong_type.status_code == 400 and "Incorrect type" in wrong_type.json()["body"][0]
    assert not RequestComment.objects.exists()


# --- questions to the team -------------------------------------------------------------------------


def test_a_question_reaches_the_team_and_its_answer_reaches_the_member_who_asked(world):
    a, _b = two_requests_in_review(world)
    asked = api_for(world.reviewer).post(f"{API}/requests/{a.pk}/questions/",
                                         {"body": "Would 12 GPUs do for the same deadline?"})
    assert asked.status_code == 201, asked.json()
    question = asked.json()
    assert (question["status"], question["asked_by_name"], question["answer"]) == ("open", "Reviewer", "")
    told = Notification.objects.filter(kind=NotificationKind.QUESTION_ASKED)
    assert {n.recipient.username for n in told} == {"lead_a", "member_a"}

    team = api_for(world.member_a)
    assert [q["body"] for q in team.get(f"{API}/requests/{a.pk}/questions/").json()] == [
        "Would 12 GPUs do for the same deadline?"
    ]
    answered = team.post(f"{API}/questions/{question['id']}/answer/", {"answer": "Yes, with two more days."})
    assert answered.status_code == 200, answered.json()
    assert (answered.json()["status"], answered.json()["answered_by_name"]) == ("answered", "Member_A")

    # The member who asked is told, and reads the answer on the request's questions.
    told = Notification.objects.filter(kind=NotificationKind.QUESTION_ANSWERED)
    assert {"reviewer", "chair", "finance"} <= {n.recipient.username for n in told}
    assert "lead_a" not in {n.recipient.username for n in told}
    mine = told.get(recipient=world.reviewer)
    assert "Would 12 GPUs do for the same deadline?" in notification_text(mine)
    seen = api_for(world.reviewer).get(f"{API}/requests/{a.pk}/questions/").json()
    assert [(q["status"], q["answer"], q["answered_by_name"]) for q in seen] == [
        ("answered", "Yes, with two more days.", "Member_A")
    ]


def test_only_the_committee_outside_the_team_asks(world):
    a, b = two_requests_in_review(world)
    assert api_for(world.lead_a).post(f"{API}/requests/{a.pk}/questions/", {"body": "Self-serve?"}).status_code == 403
    assert api_for(world.member_b).post(f"{API}/requests/{a.pk}/questions/", {"body": "Why?"}).status_code == 403
    own = api_for(world.tech).post(f"{API}/requests/{b.pk}/questions/", {"body": "Ours?"})
    assert own.status_code == 403 and "member of Team B" in own.json()["detail"]
    assert not RequestQuestion.objects.exists()
    assert not Notification.objects.filter(kind=NotificationKind.QUESTION_ASKED).exists()


def test_another_team_neither_reads_nor_answers_the_questions(world):
    a, _b = two_requests_in_review(world)
    question = services.request_question_ask(actor=world.chair, gpu_request=a, body="Why 48 hours?")
    other = api_for(world.member_b)
    assert other.get(f"{API}/requests/{a.pk}/questions/").status_code == 404
    assert other.post(f"{API}/questions/{question.pk}/answer/", {"answer": "Because."}).status_code == 404
    # The committee reads the question but does not answer for the team.
    committee = api_for(world.chair)
    assert committee.get(f"{API}/requests/{a.pk}/questions/").status_code == 200
    refused = committee.post(f"{API}/questions/{question.pk}/answer/", {"answer": "Because."})
    assert refused.status_code == 403 and "Only members of Team A" in refused.json()["detail"]
    assert api_for(world.lead_a).post(f"{API}/questions/999999/answer/", {"answer": "x"}).status_code == 404
    question.refresh_from_db()
    assert (question.status, question.answer) == (QuestionStatus.OPEN, "")
    assert not Notification.objects.filter(kind=NotificationKind.QUESTION_ANSWERED).exists()


def test_a_bad_answer_changes_nothing_and_a_question_is_answered_once(world):
    a, _b = two_requests_in_review(world)
    question = services.request_question_ask(actor=world.chair, gpu_request=a, body="Why 48 hours?")
    api = api_for(world.lead_a)
    bad = api.post(f"{API}/questions/{question.pk}/answer/", {"answer": "  ", "status": "answered"})
    assert bad.status_code == 400 and set(bad.json()) == {"answer", "status"}
    question.refresh_from_db()
    assert (question.status, question.answer) == (QuestionStatus.OPEN, "")
    assert api.post(f"{API}/questions/{question.pk}/answer/", {"answer": "Two epochs."}).status_code == 200
    again = api_for(world.member_a).post(f"{API}/questions/{question.pk}/answer/", {"answer": "Three."})
    assert again.status_code == 409 and "already answered by Lead_A" in again.json()["non_field_errors"][0]
    question.refresh_from_db()
    assert question.answer == "Two epochs."


def test_a_draft_is_not_asked_about(world):
    draft = file_request(world, submit=False, title="Not yet")
    response = api_for(world.chair).post(f"{API}/requests/{draft.pk}/questions/", {"body": "Ready?"})
    assert response.status_code == 409 and "Only a submitted request" in response.json()["non_field_errors"][0]
    assert not RequestQuestion.objects.exists()


# --- conflicts of interest -------------------------------------------------------------------------


def test_a_member_declares_a_conflict_is_recused_and_withdraws_it(world):
    a, _b = two_requests_in_review(world)
    api = api_for(world.finance)
    declared = api.post(f"{API}/requests/{a.pk}/conflicts/", {"reason": "I advise team A on this model."})
    assert declared.status_code == 201, declared.json()
    assert (declared.json()["member"], declared.json()["in_force"]) == ("finance", True)
    listed = api_for(world.chair).get(f"{API}/requests/{a.pk}/conflicts/").json()
    assert [(c["member_name"], c["reason"], c["in_force"]) for c in listed] == [
        ("Finance", "I advise team A on this model.", True)
    ]
    refused = api.post(f"{API}/requests/{a.pk}/scores/", {"criterion": "urgency", "value": 9})
    assert refused.status_code == 403 and "recused" in refused.json()["detail"]
    assert api.post(f"{API}/requests/{a.pk}/comments/", {"body": "Between us."}).status_code == 403
    twice = api.post(f"{API}/requests/{a.pk}/conflicts/", {})
    assert twice.status_code == 409
    withdrawn = api.post(f"{API}/requests/{a.pk}/conflicts/withdraw/")
    assert withdrawn.status_code == 200 and withdrawn.json()["in_force"] is False
    assert withdrawn.json()["withdrawn_at"] is not None
    assert api.post(f"{API}/requests/{a.pk}/conflicts/withdraw/").status_code == 409
    assert api.post(f"{API}/requests/{a.pk}/scores/", {"criterion": "urgency", "value": 9}).status_code == 200
    assert ConflictDeclaration.objects.count() == 1  # withdrawn, kept


def test_conflicts_are_the_committees_and_never_on_ones_own_team(world):
    a, b = two_requests_in_review(world)
    for who in ("lead_a", "member_b", "outsider"):
        api = api_for(getattr(world, who))
        assert api.get(f"{API}/requests/{a.pk}/conflicts/").status_code == 403, who
        assert api.post(f"{API}/requests/{a.pk}/conflicts/", {"reason": "x"}).status_code == 403, who
    own = api_for(world.tech).post(f"{API}/requests/{b.pk}/conflicts/", {"reason": "Mine."})
    assert own.status_code == 403 and "already kept out" in own.json()["detail"]
    assert not ConflictDeclaration.objects.exists()


def test_an_invalid_declaration_is_told_at_once_and_stores_nothing(world):
    a, _b = two_requests_in_review(world)
    api = api_for(world.finance)
    response = api.post(f"{API}/requests/{a.pk}/conflicts/", {"reason": "x" * 1001, "member": "chair"})
    assert response.status_code == 400 and set(response.json()) == {"reason", "member"}
    wrong_type = api.post(f"{API}/requests/{a.pk}/conflicts/", {"reason": ["x"], "withdrawn_at": None})
    assert wrong_type.status_code == 400 and set(wrong_type.json()) == {"reason", "withdrawn_at"}
    assert not ConflictDeclaration.objects.exists()
    assert api.post(f"{API}/requests/{a.pk}/scores/", {"criterion": "urgency", "value": 9}).status_code == 200


# --- stale scores ----------------------------------------------------------------------------------


def test_the_scores_list_says_whose_scores_are_stale_and_what_changed_until_they_hold(world):
    a, _b = two_requests_in_review(world)
    score(world.chair, a, 7, 6, 5)
    score(world.reviewer, a, 8, 6, 4)
    committee = api_for(world.finance)
    assert committee.post(f"{API}/requests/{a.pk}/questions/", {"body": "Would 12 GPUs do?"}).status_code == 201
    scores = committee.get(f"{API}/requests/{a.pk}/scores/").json()
    assert len(scores) == 6
    assert all((s["stale"], s["stale_since"], s["stale_changes"], s["counted"]) == (False, None, [], True)
               for s in scores)

    # The team answers by changing the request (allowed while the question is open): the scores go stale.
    edited = api_for(world.lead_a).put(f"{API}/requests/{a.pk}/", request_body(world, gpu_count=12), format="json")
    assert edited.status_code == 200, edited.json()
    scores = committee.get(f"{API}/requests/{a.pk}/scores/").json()
    assert {s["member"] for s in scores if s["stale"]} == {"chair", "reviewer"}
    chair = next(s for s in scores if s["member"] == "chair")
    assert {"field": "gpu_count", "label": "GPUs", "old": "16", "new": "12"} in chair["stale_changes"]
    assert chair["stale_since"] is not None and chair["counted"] is True  # stale scores still count

    held = api_for(world.chair).post(f"{API}/requests/{a.pk}/scores/hold/")
    assert held.status_code == 200
    assert {s["member"] for s in held.json() if s["stale"]} == {"reviewer"}
    again = api_for(world.chair).post(f"{API}/requests/{a.pk}/scores/hold/")
    assert again.status_code == 409 and "not stale" in again.json()["non_field_errors"][0]
    assert set(ScoreStaleness.objects.values_list("member__username", flat=True)) == {"reviewer"}
    assert Score.objects.filter(request=a).count() == 6  # confirming changes no score


def test_a_recused_members_scores_are_listed_but_do_not_count(world):
    a, _b = two_requests_in_review(world)
    score(world.finance, a, 10, 10, 10)
    services.conflict_declare(actor=world.finance, gpu_request=a)
    scores = api_for(world.chair).get(f"{API}/requests/{a.pk}/scores/").json()
    assert [(s["member"], s["counted"]) for s in scores] == [("finance", False)] * 3


def test_the_schema_documents_the_discussion_and_its_strict_bodies(world):
    schema = api_for(world.chair).get(f"{API}/schema/?format=json").json()
    assert {"/api/v1/requests/{id}/comments/", "/api/v1/requests/{id}/questions/", "/api/v1/questions/{id}/answer/",
            "/api/v1/requests/{id}/conflicts/", "/api/v1/requests/{id}/conflicts/withdraw/",
            "/api/v1/requests/{id}/scores/hold/"} <= set(schema["paths"])
    components = schema["components"]["schemas"]
    for name in ("CommentInputRequest", "QuestionInputRequest", "AnswerInputRequest", "ConflictInputRequest"):
        assert components[name]["additionalProperties"] is False, name
    assert {"stale", "stale_since", "stale_changes", "counted"} <= set(components["Score"]["properties"])
    assert components["QuestionStatusEnum"]["enum"] == ["open", "answered"]


def test_the_scores_list_reads_its_flags_in_a_constant_number_of_queries(world):
    a, b = two_requests_in_review(world)
    score(world.chair, a, 7, 6, 5)
    score(world.chair, b, 7, 6, 5)
    for member in (world.reviewer, world.finance):
        score(member, b, 5, 5, 5)
    services.conflict_declare(actor=world.finance, gpu_request=b)
    ScoreStaleness.objects.create(request=b, member=world.chair, member_name="Chair", changes=[])
    api = api_for(world.chair)
    counts = []
    for gpu_request in (a, b):  # one member's scores, then three members' with a stale mark and a recusal
        with CaptureQueriesContext(connection) as queries:
            assert api.get(f"{API}/requests/{gpu_request.pk}/scores/").status_code == 200
        counts.append(len(queries))
    assert counts[0] == counts[1]

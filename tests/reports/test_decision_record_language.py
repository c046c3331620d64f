"""A week's decision record in the reader's language: a zh-hans reader reads it in Chinese, rendered from the data its
revision saved; an English reader reads the archived text as before; the archived text and its chain never change."""

from __future__ import annotations

import re
from io import StringIO

from django.core.management import call_command
from django.urls import reverse
from django.utils import translation

from committee import services as committee_services
from reports import records, selectors
from reports.models import ExportStatus, Page, PageRevision, PdfExport
from reports.selectors import revision_latest
from tests.reports.conftest import RATIONALES, note_write
from tests.reports.test_pdf_export import pdf_text


def record(world):
    return Page.objects.select_related("latest_revision").get(source_key=f"cycle:{world.cycle.week}")


def published(week, capture, *, language="en"):
    """The week published, then its second request corrected, each by a chair whose pages are in `language`."""
    with translation.override(language), capture(execute=True):
        committee_services.cycle_publish(actor=week.chair, cycle=week.cycle)
        committee_services.decision_correct(
            actor=week.chair, gpu_request=week.requests[1], outcome="partial", granted_gpu_count=12,
            rationale="Twelve fit once the node is back.", reason="A node came back.",
        )
    return revision_latest(page=record(week))


def read(client, user, url, language):
    client.force_login(user)
    response = client.get(url, HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200, url
    return response.content.decode()


def article(html):
    return html[html.index('<article class="archive-page">'):html.index("</article>", html.index("archive-page"))]


def markdown_body(html):
    """The record's text as the page shows it (the charts below it are drawn in the reader's language anyway)."""
    start = html.index('<div class="markdown-body">')
    ends = [i for i in (html.find('<section class="charts">', start), html.find("</article>", start)) if i > 0]
    return html[start:min(ends)]


def test_a_zh_hans_reader_reads_the_record_in_chinese_with_what_people_wrote_as_written(
        week, client, django_capture_on_commit_callbacks):
    revision = published(week, django_capture_on_commit_callbacks)
    html = read(client, week.member_a, reverse("reports:page", args=[record(week).slug]), "zh-hans")
    text = article(html)
    assert f"<h1>{week.cycle.week} 决定记录</h1>" in text
    for heading in ("决定与理由", "参与者", "排名", "更正与申诉", "已发布的时间窗口", "委员会备注"):
        assert re.search(rf"<h2[^>]*>{heading}</h2>", text), heading
    assert "状态：已发布" in text or "状态: 已发布" in text
    assert "批准" in text and "部分批准" in text and "暂缓" in text  # the outcomes
    assert "标准" in text  # the windows' tier
    for english in ("Decisions and rationale", "Published windows", "Who took part", "Committee notes",
                    "Status: Published", "Partial grant", "standard"):
        assert english not in text, english
    # What people wrote is quoted as they wrote it: rationales, the correction's reason, titles.
    for rationale in (RATIONALES["first"], RATIONALES["third"], "Twelve fit once the node is back."):
        assert rationale in text
    assert "A node came back." in text and "Vision model | v2" in text
    # The reader is told this is a rendering, and where the archived text is.
    assert "?text=archived" in html and "Decisions and rationale" in revision.body


def test_an_english_reader_reads_the_archived_text_as_before(week, client, django_capture_on_commit_callbacks):
    revision = published(week, django_capture_on_commit_callbacks)
    html = read(client, week.member_a, reverse("reports:page", args=[record(week).slug]), "en")
    text = article(html)
    assert f"<h1>{revision.title}</h1>" in text and "## Decisions and rationale" in revision.body
    assert re.search(r"<h2[^>]*>Decisions and rationale</h2>", text) and "决定" not in text
    assert "?text=archived" not in html


def test_the_archived_text_is_one_click_away_in_chinese_and_unchanged(week, client,
                                                                     django_capture_on_commit_callbacks):
    revision = published(week, django_capture_on_commit_callbacks)
    url = reverse("reports:revision", args=[record(week).slug, revision.number])
    english = markdown_body(read(client, week.member_a, url, "en"))
    archived = read(client, week.member_a, url + "?text=archived", "zh-hans")
    assert markdown_body(archived) == english and "Decisions and rationale" in english
    assert f'<a href="{url}">' in archived  # and back to the reader's language
    chinese = read(client, week.member_a, url, "zh-hans")
    assert "决定与理由" in markdown_body(chinese) and 'href="?text=archived"' in chinese


def test_a_chair_in_zh_hans_publishes_the_record_in_the_default_language_and_the_chain_holds(
        week, client, django_capture_on_commit_callbacks):
    revision = published(week, django_capture_on_commit_callbacks, language="zh-hans")
    assert revision.data["language"] == "en" and revision.title == f"Decision record {week.cycle.week}"
    assert "## Decisions and rationale" in revision.body and "决定" not in revision.body
    assert revision.summary.startswith("Updated: plan version 2 published")
    stored = {r.pk: (r.body, r.data, r.hash) for r in PageRevision.objects.all()}
    read(client, week.member_a, reverse("reports:page", args=[record(week).slug]), "zh-hans")
    assert {r.pk: (r.body, r.data, r.hash) for r in PageRevision.objects.all()} == stored
    out = StringIO()
    with translation.override("en"):
        call_command("verify_archive", stdout=out)
    assert "Archive intact" in out.getvalue()


def test_notes_people_wrote_stay_as_written_in_chinese(week, client, django_capture_on_commit_callbacks):
    page = record(week)
    note_write(client, page, "The tech lead abstained on team B's requests.", as_user=week.tech)
    text = article(read(client, week.member_a, reverse("reports:page", args=[page.slug]), "zh-hans"))
    assert "The tech lead abstained on team B&#x27;s requests." in text or "team B's requests" in text
    assert "Committee notes" in text  # a heading someone kept in their notes is theirs: not translated
    assert "决定与理由" in text


def test_a_record_written_before_labels_had_codes_renders_its_stored_labels(week):
    data = revision_latest(page=record(week)).data
    for row in data["ranking"]:
        row.pop("placement_params", None)
        row["placement_label"] = "as stored"
    data.pop("language")
    with translation.override("zh-hans"):
        body = records.decision_record_body_in_language(body=revision_latest(page=record(week)).body, data=data)
    assert "决定与理由" in body and "as stored" in body


def ask_for_pdf(client, user, page, revision, language, capture):
    client.force_login(user)
    with capture(execute=True):
        response = client.post(reverse("reports:revision-pdf", args=[page.slug, revision.number]),
                               HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 302
    return PdfExport.objects.get(revision=revision, language=language)


def test_the_record_s_pdf_prints_in_the_language_it_is_asked_in(week, client, settings,
                                                                django_capture_on_commit_callbacks):
    settings.CHROMIUM_PATH = "/nonexistent/chromium"  # the text is what this is about; the charts print elsewhere
    revision = published(week, django_capture_on_commit_callbacks)
    page = record(week)
    chinese = ask_for_pdf(client, week.member_a, page, revision, "zh-hans", django_capture_on_commit_callbacks)
    english = ask_for_pdf(client, week.member_b, page, revision, "en", django_capture_on_commit_callbacks)
    assert chinese.pk != english.pk and chinese.status == english.status == ExportStatus.DONE, chinese.error
    assert chinese.file_name.endswith("-zh-hans.pdf") and not english.file_name.endswith("-zh-hans.pdf")
    in_chinese = pdf_text(selectors.pdf_export_path(export=chinese))
    in_english = pdf_text(selectors.pdf_export_path(export=english))
    assert "决定与理由" in in_chinese and "Decisions and rationale" not in in_chinese
    assert RATIONALES["first"] in " ".join(in_chinese.split())  # as written
    assert "Decisions and rationale" in in_english and "决定与理由" not in in_english
    assert revision.hash in in_chinese and revision.hash in in_english  # the same revision, whichever language
    # Each reader's page offers their own PDF.
    client.force_login(week.member_a)
    html = client.get(reverse("reports:page", args=[page.slug]), HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert reverse("reports:export-download", args=[chinese.pk]) in html
    assert reverse("reports:export-download", args=[english.pk]) not in html

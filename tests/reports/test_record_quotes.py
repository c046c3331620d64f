"""The official record quotes what teams and proposers wrote; it does not link or show images from it.

A team's appeal statement and a policy proposal's reason, expected effect, comments and votes reach the
decision record and the proposal's archive page (reports/records/blocks.py, `quote_text` and `text`): their
Markdown and HTML show as typed, so a link is its plain URL and an image its address, on the page and in
its PDF (no link annotation: the PDF's objects are read back, inflated). Charts name teams and TCO options
as text too: Plotly reads <a href> in legends and labels.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import zlib
from datetime import timedelta
from typing import Any

from django.urls import reverse

from committee import services as committee_services
from policy import services as policy_services
from reports import records
from reports.dashboards import charts as dashboard_charts
from reports.dashboards import tco
from reports.markdown import render
from reports.models import Page
from reports.pdf import html_to_pdf, render_revision_pdf
from reports.selectors import revision_latest
from tests.clock import FIXED_NOW
from tests.committee.appealing import finalize_week, publish
from tests.conftest import require

HOSTILE = (
    "See [our plan](https://evil.example/plan) and ![pixel](https://evil.example/pixel.png)\n"
    '<a href="https://evil.example/html">click</a> <img src="https://evil.example/img.png">\n'
    "https://evil.example/bare"
)
SHOWN = ["[our plan](https://evil.example/plan)", "![pixel](https://evil.example/pixel.png)",
         '<a href="https://evil.example/html">click</a>', "https://evil.example/bare"]


def _tags_from_it(html: str) -> list[str]:
    """Every <a> or <img> tag of `html` that points at the hostile text's host."""
    return [tag for tag in re.findall(r"<(?:a|img)\b[^>]*>", html) if "evil.example" in tag]


def _pdf_objects(pdf: bytes) -> bytes:
    """The PDF with its compressed streams (object streams included) inflated, to read annotations from."""
    parts = [pdf]
    for match in re.finditer(rb"stream\r?\n(.*?)\r?\nendstream", pdf, re.S):
        try:
            parts.append(zlib.decompress(match.group(1)))
        except zlib.error:
            continue
    return b"\n".join(parts)


def _pdf_words(pdf: bytes) -> str:
    require(shutil.which("pdftotext") is not None, "pdftotext (apt-get install poppler-utils)")
    text = subprocess.run(["pdftotext", "-", "-"], input=pdf, capture_output=True, check=True).stdout.decode()
    return " ".join(text.split())


def test_the_pdf_check_sees_a_link_where_there_is_one():
    """The control: a link the committee writes in a page is a link annotation the check finds."""
    pdf = html_to_pdf(html=f"<html><body>{render('[the charter](https://docket.example/charter)')}</body></html>")
    assert b"/URI (https://docket.example/charter)" in _pdf_objects(pdf)


def test_an_appeal_statement_is_quoted_in_the_decision_record(world, clock, client,
                                                              django_capture_on_commit_callbacks):
    clock.move_to(FIXED_NOW, tick=False)
    _first, second, _third = finalize_week(world)
    publish(world)
    with django_capture_on_commit_callbacks(execute=True):
        committee_services.appeal_file(actor=world.member_b, gpu_request=second, statement=HOSTILE,
                                       now=FIXED_NOW + timedelta(hours=1))
    page = Page.objects.get(source_key=f"cycle:{world.cycle.week}")
    body = revision_latest(page=page).body
    assert "Statement of Team B" in body
    html = render(body)
    assert _tags_from_it(html) == []
    client.force_login(world.member_b)
    shown = client.get(reverse("reports:page", args=[page.slug])).content.decode()
    assert _tags_from_it(shown) == []
    words = " ".join(re.sub(r"<[^>]+>", " ", shown).replace("&lt;", "<").replace("&gt;", ">")
                     .replace("&quot;", '"').replace("&#x27;", "'").split())
    for typed in SHOWN:
        assert typed in words
    pdf = html_to_pdf(html=f"<html><body>{html}</body></html>")  # the record's text as the PDF lays it out
    assert not re.search(rb"/URI\s*\(https://evil", _pdf_objects(pdf))
    words = _pdf_words(pdf)
    assert "https://evil.example/bare" in words and "[our plan](https://evil.example/plan)" in words


def test_a_proposal_page_and_its_pdf_quote_the_proposer_comments_and_votes(world, client,
                                                                           django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        proposal = policy_services.proposal_submit(actor=world.member_a, title="Reserve 15", reason=HOSTILE,
                                                   expected_effect=HOSTILE,
                                                   changes={"pool.a100.burst_reserve_pct": "15"})
    with django_capture_on_commit_callbacks(execute=True):
        policy_services.proposal_comment(actor=world.member_b, proposal=proposal, body=HOSTILE)
    with django_capture_on_commit_callbacks(execute=True):
        policy_services.proposal_vote(actor=world.finance, proposal=proposal, choice="support", comment=HOSTILE,
                                      now=FIXED_NOW)
    page = Page.objects.get(slug=records.proposal_slug(proposal.pk))
    revision = revision_latest(page=page)
    assert revision.body.count("evil\\.example/plan") == 4  # reason, effect, comment, vote: all escaped
    client.force_login(world.member_a)
    shown = client.get(reverse("reports:page", args=[page.slug])).content.decode()
    assert _tags_from_it(shown) == []
    pdf = render_revision_pdf(revision=revision).content  # the archive's own PDF of the page
    objects = _pdf_objects(pdf)
    assert not re.search(rb"/URI\s*\(https://evil", objects)
    words = _pdf_words(pdf)
    assert words.count("https://evil.example/bare") == 4
    assert "![pixel](https://evil.example/pixel.png)" in words


def test_a_tco_options_name_from_the_query_string_is_text_in_the_legend():
    """Plotly would draw <a href> in a legend as a link: the option's name arrives escaped, and reads as typed."""
    named = dataclasses.replace(tco.SEED_A100, name='<a href="https://evil.example">A100</a>')
    comparison = tco.compare(options=[named, tco.SEED_V100], scenario=tco.SEED_SCENARIO)
    figure: Any = dashboard_charts.as_json(dashboard_charts.tco_figure(comparison))
    assert figure["data"][0]["name"] == "&lt;a href=&quot;https://evil.example&quot;&gt;A100&lt;/a&gt;"
    assert figure["data"][1]["name"] == tco.SEED_V100.name

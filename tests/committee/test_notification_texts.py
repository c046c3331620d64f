"""The digest's lines: one plain-text template per notification kind, every word marked for translation."""

from __future__ import annotations

import pytest
from django.template.loader import get_template

from committee.models import Notification, NotificationKind
from committee.services.notifications import notification_text
from tests.test_templates_i18n import TEMPLATES, untranslated


@pytest.mark.parametrize("kind", NotificationKind.values)
def test_every_notification_kind_has_its_template_with_every_string_marked(kind: str) -> None:
    name = f"committee/notifications/{kind}.txt"
    get_template(name)  # exists and parses
    assert untranslated((TEMPLATES / name).read_text()) == ([], [])


def test_a_kind_docket_does_not_know_is_shown_as_the_notification_key() -> None:
    assert notification_text(Notification(kind="retired_kind", key="request:7", params={"team": "A"})) == "request:7"


def test_the_text_keeps_names_as_written_in_plain_text_mail() -> None:
    notification = Notification(
        kind=NotificationKind.REQUEST_SUBMITTED,
        key="request:1",
        params={"team": "R&D <core>", "title": "Tom's \"big\" run", "week": "2027-W10", "by": ""},
    )
    assert notification_text(notification) == (
        "R&D <core>: “Tom's \"big\" run” was submitted for week 2027-W10 by a member."
    )

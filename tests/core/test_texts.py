"""core.texts: a text Docket stores as a code with parameters renders in the reader's language, or as written."""

from __future__ import annotations

import pytest
from django.utils import translation

from core.texts import stored_text, text_render


def test_a_stored_code_renders_in_the_active_language():
    stored = stored_text("emergency_rejected", name="Chair", note="Wait for Friday.")
    assert stored == {"code": "emergency_rejected", "params": {"name": "Chair", "note": "Wait for Friday."}}
    with translation.override("en"):
        assert text_render(stored, fallback="x") == "Emergency request rejected by Chair: Wait for Friday."
    with translation.override("zh-hans"):
        assert text_render(stored, fallback="x") == "紧急申请被 Chair 驳回：Wait for Friday."


@pytest.mark.parametrize(
    "stored",
    [{}, None, {"code": "no_such_code", "params": {}}, {"code": "emergency_rejected", "params": {"name": "Chair"}},
     {"code": "emergency_reviewed", "params": {"outcome": "not-an-outcome", "note": ""}},
     {"code": "emergency_rejected", "params": ["Chair"]}],
)
def test_a_row_without_a_readable_code_shows_its_text_as_written(stored):
    assert text_render(stored, fallback="As written in 2026.") == "As written in 2026."


def test_an_unknown_code_is_refused_where_it_is_written():
    with pytest.raises(ValueError, match="no renderer for the stored text 'emergncy_placed'"):
        stored_text("emergncy_placed", title="x")

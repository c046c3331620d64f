"""Every user-facing string in the templates is marked for translation.

Strips what Django translates or renders ({% translate %}, {% blocktranslate %}, {{ … }},
tags, comments, scripts, styles, URL paths) and fails on any word left over, naming the
template. Attribute texts a person reads (title, placeholder, aria-label, alt) count too.
"""

from __future__ import annotations

import re
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"

# Proper names, and Pico CSS's styling hook (it selects nav[aria-label=breadcrumb]).
ALLOWED_WORDS = {"Docket"}
ALLOWED_ATTRIBUTES = {"breadcrumb"}

STRIP = [
    re.compile(r"{%\s*blocktranslate.*?{%\s*endblocktranslate\s*%}", re.S),
    re.compile(r"{#.*?#}", re.S),
    re.compile(r"{%\s*comment\s*%}.*?{%\s*endcomment\s*%}", re.S),
    re.compile(r"<(script|style)\b.*?</\1>", re.S),
    re.compile(r"{{.*?}}", re.S),
]
ATTRIBUTE = re.compile(r'\b(?:placeholder|title|aria-label|alt)="([^"{]*[A-Za-z][^"{]*)"')


def untranslated(text: str) -> tuple[list[str], list[str]]:
    for pattern in STRIP:
        text = pattern.sub(" ", text)
    attributes = [value for value in ATTRIBUTE.findall(text) if value not in ALLOWED_ATTRIBUTES]
    text = re.sub(r"{%.*?%}", " ", text, flags=re.S)
    text = re.sub(r"<[^>]*>", " ", text, flags=re.S)
    text = re.sub(r"&[a-z#0-9]+;", " ", text)
    text = re.sub(r"(?<!\w)/[\w/.-]*", " ", text)  # URL paths shown as such
    words = [word for word in re.findall(r"[A-Za-z][A-Za-z'’-]+", text) if word not in ALLOWED_WORDS]
    return words, attributes


def test_the_checker_catches_an_unmarked_string():
    assert untranslated('<p>Hello {{ name }}</p><a title="Open it">{% translate "Go" %}</a>') == (
        ["Hello"],
        ["Open it"],
    )


def test_every_template_string_is_marked_for_translation():
    offenders = {}
    for path in sorted(TEMPLATES.rglob("*.html")):
        words, attributes = untranslated(path.read_text())
        if words or attributes:
            offenders[str(path.relative_to(TEMPLATES))] = words[:10] + attributes[:5]
    assert not offenders, f"untranslated text in templates: {offenders}"

"""Archive forms. They parse input; the services decide (and re-check) everything."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from core.forms import StrictIntegerField
from reports.services.pages import MAX_BODY_CHARS, MAX_SUMMARY_CHARS, MAX_TITLE_CHARS


class PageEditForm(forms.Form):
    """An edit of a page. `base_revision_id` is the revision the editor started from (Wagtail's loaded revision)."""

    title = forms.CharField(label=_("Title"), max_length=MAX_TITLE_CHARS)
    body = forms.CharField(
        label=_("Text (Markdown)"),
        required=False,
        max_length=MAX_BODY_CHARS,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 24, "spellcheck": "true", "class": "markdown-editor"}),
        help_text=_("Link a page with [[page-address]] or [[page-address|label]], a request with [[request:42]]."),
    )
    summary = forms.CharField(
        label=_("Edit summary"),
        max_length=MAX_SUMMARY_CHARS,
        help_text=_("Required: what you changed and why. It stays in the history."),
    )
    base_revision_id = StrictIntegerField(widget=forms.HiddenInput, required=False, min_value=1)


class GeneratedPageEditForm(PageEditForm):
    """An edit of a generated page (a decision record, a policy): only the text around its generated block."""

    body_above = forms.CharField(
        label=_("Text above the generated record (Markdown)"),
        required=False,
        max_length=MAX_BODY_CHARS,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "true", "class": "markdown-editor"}),
    )
    field_order = ["title", "body_above", "body", "summary"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["body"].label = _("Text (Markdown), shown below the generated record")
        self.fields["body"].widget.attrs["rows"] = 12


class PreviewForm(forms.Form):
    """The editor's text as it stands, for the preview beside the textarea."""

    body = forms.CharField(required=False, max_length=MAX_BODY_CHARS, strip=False)
    body_above = forms.CharField(required=False, max_length=MAX_BODY_CHARS, strip=False)


class PageCreateForm(PageEditForm):
    slug = forms.SlugField(
        label=_("Address"),
        max_length=100,
        help_text=_("Lowercase letters, digits and hyphens: it becomes /archive/<address>/."),
    )
    field_order = ["slug", "title", "body", "summary"]


class RestoreForm(forms.Form):
    summary = forms.CharField(label=_("Why restore it?"), max_length=200, required=False)
    base_revision_id = StrictIntegerField(widget=forms.HiddenInput, min_value=1)


class CompareForm(forms.Form):
    old = StrictIntegerField(label=_("From revision"), min_value=1)
    new = StrictIntegerField(label=_("To revision"), min_value=1)


class SearchForm(forms.Form):
    q = forms.CharField(label=_("Search the archive"), max_length=200, required=False)

"""Reads of PDF exports: an export and where its file is, for everyone who may read the archive."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.http import Http404
from django.utils import translation
from django.utils.translation import gettext as _

from reports.models import PageRevision, PdfExport
from reports.selectors.pages import Viewer, user_can_read


def pdf_root() -> Path:
    return Path(settings.DOCKET_PDF_ROOT)


def pdf_export_path(*, export: PdfExport) -> Path | None:
    if not export.file_name:
        return None
    return pdf_root() / export.file_name


def export_language() -> str:
    """The language a PDF asked for now is printed in: the reader's, as one of settings.LANGUAGES."""
    return translation.get_supported_language_variant(translation.get_language() or settings.LANGUAGE_CODE)


def export_for_revision(*, revision: PageRevision) -> PdfExport | None:
    """The revision's PDF in the reader's language, if one was asked for."""
    return PdfExport.objects.filter(revision=revision, language=export_language()).first()


def export_get(*, viewer: Viewer, pk: int) -> PdfExport:
    if not user_can_read(user=viewer):
        raise Http404
    try:
        return PdfExport.objects.select_related("revision", "revision__page").get(pk=pk)
    except PdfExport.DoesNotExist:
        raise Http404(_("No such export.")) from None

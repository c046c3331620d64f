"""Every write of the archive; import from here. One module per concept."""

from reports.services.exports import pdf_export_render, pdf_export_request
from reports.services.pages import (
    SYSTEM_AUTHOR,
    EditConflict,
    page_append_system,
    page_create,
    page_create_system,
    page_notes_save,
    page_revision_restore,
    page_revision_save,
)
from reports.services.records import (
    decision_record_enqueue,
    decision_record_sync,
    policy_change_page_sync,
    proposal_page_sync,
)

__all__ = [
    "SYSTEM_AUTHOR",
    "EditConflict",
    "decision_record_enqueue",
    "decision_record_sync",
    "page_append_system",
    "page_create",
    "page_create_system",
    "page_notes_save",
    "page_revision_restore",
    "page_revision_save",
    "pdf_export_render",
    "pdf_export_request",
    "policy_change_page_sync",
    "proposal_page_sync",
]

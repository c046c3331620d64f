"""Every non-trivial read of the archive; import from here. One module per concept."""

from reports.selectors.exports import export_for_revision, export_get, pdf_export_path, pdf_root
from reports.selectors.integrity import VerifyResult, archive_verify
from reports.selectors.pages import (
    ChainHead,
    backlinks,
    chain_head,
    existing_slugs,
    page_get,
    page_list,
    readable_requests,
    recent_changes,
    revision_charts,
    revision_compare,
    revision_get,
    revision_latest,
    revision_list,
    snapshot,
    text_compare,
    user_can_edit,
    user_can_read,
)
from reports.selectors.records import decision_record_data, proposal_data
from reports.selectors.search import RequestHit, SearchHit, page_search, request_search

__all__ = [
    "ChainHead",
    "RequestHit",
    "SearchHit",
    "VerifyResult",
    "archive_verify",
    "backlinks",
    "chain_head",
    "decision_record_data",
    "existing_slugs",
    "export_for_revision",
    "export_get",
    "page_get",
    "page_list",
    "page_search",
    "pdf_export_path",
    "pdf_root",
    "proposal_data",
    "readable_requests",
    "recent_changes",
    "request_search",
    "revision_charts",
    "revision_compare",
    "revision_get",
    "revision_latest",
    "revision_list",
    "snapshot",
    "text_compare",
    "user_can_edit",
    "user_can_read",
]

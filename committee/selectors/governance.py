"""The governance version in force for a week: the score quorum and the fair-share settings."""

from __future__ import annotations

from committee import weeks
from committee.models import GovernanceVersion


def governance_for_week(*, week: str) -> GovernanceVersion:
    """The version effective for `week` (YYYY-Www): the latest whose effective week is not after it; else the settings.

    One query. A version effective from a later week does not apply: the weeks before it keep the rules they had.
    """
    monday = weeks.parse_week(week)
    version = GovernanceVersion.objects.filter(effective_monday__lte=monday).order_by("-effective_monday").first()
    return version if version is not None else GovernanceVersion.from_settings()


def governance_versions() -> list[GovernanceVersion]:
    """Every version, the settings' version 1 first, then by effective week. One query."""
    return [GovernanceVersion.from_settings(), *GovernanceVersion.objects.order_by("effective_monday")]

"""The API's permissions are the pages' permissions: the same selectors decide."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

from committee import selectors
from committee.services.scores import ScoreForbidden, score_answer, score_seat_required


class IsCommitteeMember(BasePermission):
    message = _("Only committee members may use this endpoint.")

    def has_permission(self, request: Request, view: Any) -> bool:
        return selectors.user_is_committee(user=request.user)


class IsCommitteeMemberToScore(IsCommitteeMember):
    """Committee members read the scores; a score sent by anyone else is refused in the words the review page and
    the grid use (committee/services/scores.py)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        if request.method in SAFE_METHODS:
            return super().has_permission(request, view)
        try:
            score_seat_required(actor=request.user)
        except ScoreForbidden as exc:
            raise exceptions.PermissionDenied(score_answer(exc).message) from exc
        return True


class IsChair(BasePermission):
    message = _("Only the chair may use this endpoint.")

    def has_permission(self, request: Request, view: Any) -> bool:
        return selectors.user_is_chair(user=request.user)

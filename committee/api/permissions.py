"""The API's permissions are the pages' permissions: the same selectors decide."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from committee import selectors


class IsCommitteeMember(BasePermission):
    message = _("Only committee members may use this endpoint.")

    def has_permission(self, request: Request, view: Any) -> bool:
        return selectors.user_is_committee(user=request.user)


class IsChair(BasePermission):
    message = _("Only the chair may use this endpoint.")

    def has_permission(self, request: Request, view: Any) -> bool:
        return selectors.user_is_chair(user=request.user)

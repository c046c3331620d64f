"""The history of policy parameters (django-simple-history): who changed what, when and why.

Models that hold policy (a team's fair-share weight, a pool's reserves and cost, a cluster account, a
committee seat) declare `history = policy_history()`. Every save then writes a historical row with the
user (HistoryRequestMiddleware tells simple-history who the request's user is), the time and the change
reason; the user's name is also copied as a string, so the row stays readable after the account is gone.

In the admin, `ReasonRequiredAdmin` adds a required "Reason for this change" to the form: a change
without one is refused, and the reason is stored on the historical row.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django import forms
from django.db import models
from django.dispatch import receiver
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _
from simple_history.admin import SimpleHistoryAdmin
from simple_history.manager import HistoryManager
from simple_history.models import HistoricalRecords
from simple_history.signals import pre_create_historical_record

from core.audit import person_name


class PolicyHistoryFields(models.Model):
    """Added to every historical row: the changer's name as a string (audit rows copy names)."""

    history_user_name = models.CharField(_("changed by"), max_length=150, blank=True)

    class Meta:
        abstract = True


class PolicyHistoryManager(HistoryManager):
    """simple-history's manager, its class made once: every `Model.history` (each save of a tracked row asks for it)
    builds the manager's class anew from the queryset's (`from_queryset`, which walks the queryset's members: 1–2 ms
    a save); the class made the first time serves every later one."""

    @classmethod
    @cache
    def from_queryset(cls, queryset_class: Any, class_name: str | None = None) -> Any:
        return super().from_queryset(queryset_class, class_name)


def policy_history(**options: Any) -> HistoricalRecords:
    return HistoricalRecords(
        bases=[PolicyHistoryFields], cascade_delete_history=False, history_manager=PolicyHistoryManager, **options
    )


@receiver(pre_create_historical_record, dispatch_uid="core.history.user_name")
def _copy_user_name(sender: Any, history_instance: Any, history_user: Any = None, **kwargs: Any) -> None:
    if isinstance(history_instance, PolicyHistoryFields) and history_user is not None:
        history_instance.history_user_name = person_name(history_user)


class ChangeReasonForm(forms.ModelForm):
    change_reason = forms.CharField(
        label=_("Reason for this change"),
        max_length=500,
        strip=True,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=_("Required. Shown with the change in the policy history."),
    )


class ReasonRequiredAdmin(SimpleHistoryAdmin):
    """An admin whose every add or change needs a reason, kept with the historical row (and a History page)."""

    form = ChangeReasonForm

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        obj._change_reason = form.cleaned_data["change_reason"]
        super().save_model(request, obj, form, change)

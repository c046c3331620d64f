"""Forms of the allocations app: the org chart's filter (a department, a team in it), which every list of teams'
things shares: the windows page and the dashboards."""

from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import QuerySet
from django.utils.translation import gettext_lazy as _

from allocations.models import Department, Team
from core.forms import form_field


class OrgFilterForm(forms.Form):
    """A department and a team, each optional, by slug, of those offered; a team outside the chosen department is an
    error on the team. A form that offers no department hides the choice (a department asked for is still refused)."""

    department: forms.ModelChoiceField[Department] = forms.ModelChoiceField(
        label=_("Department"), queryset=None, to_field_name="slug", required=False
    )
    team: forms.ModelChoiceField[Team] = forms.ModelChoiceField(
        label=_("Team"), queryset=None, to_field_name="slug", required=False
    )

    def __init__(
        self, *args: Any, teams: QuerySet[Team], departments: QuerySet[Department], all_teams_label: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        team = form_field(self, "team", forms.ModelChoiceField)
        team.queryset = teams.order_by("name")
        team.empty_label = all_teams_label or _("All teams")
        department = form_field(self, "department", forms.ModelChoiceField)
        department.queryset = departments.order_by("name")
        department.empty_label = _("All departments")

    def hide_department(self) -> None:
        """Nothing to choose (no department offered): the field is hidden, a department asked for still refused."""
        self.fields["department"].widget = forms.HiddenInput()

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        assert data is not None, "Form.clean returns cleaned_data"
        team, department = data.get("team"), data.get("department")
        if team is not None and department is not None and team.department_id != department.pk:
            self.add_error("team", _("This team is not in the chosen department."))
        return data


class WindowFilterForm(OrgFilterForm):
    """The windows page's filter: every department and team (every signed-in person reads every window)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, teams=Team.objects.all(), departments=Department.objects.all(), **kwargs)

    def chosen(self) -> tuple[Department | None, Team | None]:
        """(department, team) when valid, (None, None) otherwise: an invalid filter shows its error and every window."""
        if not self.is_valid():
            return None, None
        return self.cleaned_data.get("department"), self.cleaned_data.get("team")

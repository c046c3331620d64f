"""Forms of the allocations app: the org chart's filter (a department, a team in it), which every list of teams'
things shares: the windows page, the review's request cards and the dashboards."""

from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import QuerySet
from django.utils.translation import gettext_lazy as _

from allocations.models import Department, Team
from core.forms import form_field

ORG_FILTER_KEYS = ("department", "team")


class OrgFilterForm(forms.Form):
    """A department and a team, each optional, by slug, of those offered (every one unless given); a team outside the
    chosen department is an error on the team."""

    department: forms.ModelChoiceField[Department] = forms.ModelChoiceField(
        label=_("Department"), queryset=None, to_field_name="slug", required=False
    )
    team: forms.ModelChoiceField[Team] = forms.ModelChoiceField(
        label=_("Team"), queryset=None, to_field_name="slug", required=False
    )

    def __init__(
        self, *args: Any, teams: QuerySet[Team] | None = None, departments: QuerySet[Department] | None = None,
        all_teams_label: Any = None, **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        team = form_field(self, "team", forms.ModelChoiceField)
        team.queryset = (Team.objects.all() if teams is None else teams).order_by("name")
        team.empty_label = all_teams_label or _("All teams")
        department = form_field(self, "department", forms.ModelChoiceField)
        department.queryset = (Department.objects.all() if departments is None else departments).order_by("name")
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

    def chosen(self) -> tuple[Department | None, Team | None]:
        """(department, team) when valid, (None, None) otherwise: an invalid filter shows its error, narrows nothing."""
        if not self.is_valid():
            return None, None
        return self.cleaned_data.get("department"), self.cleaned_data.get("team")

    def query(self) -> dict[str, str]:
        """The filter as chosen, for the links that keep it: {} when it narrows nothing."""
        department, team = self.chosen()
        return {key: value.slug for key, value in (("department", department), ("team", team)) if value is not None}


def org_filter(
    params: Any, *, teams: QuerySet[Team] | None = None, departments: QuerySet[Department] | None = None,
) -> OrgFilterForm:
    """The filter a page's query asks for (bound only when it names a department or a team), of the teams and
    departments offered (every one unless given)."""
    return OrgFilterForm(params if any(params.get(key) for key in ORG_FILTER_KEYS) else None, teams=teams,
                         departments=departments)

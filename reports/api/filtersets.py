"""Query parameters of the archive endpoints."""

from __future__ import annotations

import django_filters
from django.utils.translation import gettext_lazy as _

from reports.models import Page, PageKind


class PageFilterSet(django_filters.FilterSet):
    kind = django_filters.ChoiceFilter(choices=PageKind.choices, help_text=_("Only pages of this kind."))

    class Meta:
        model = Page
        fields = ["kind"]

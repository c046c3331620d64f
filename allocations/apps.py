from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AllocationsConfig(AppConfig):
    name = "allocations"
    verbose_name = _("Allocations")

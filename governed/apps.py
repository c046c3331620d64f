from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class GovernedConfig(AppConfig):
    name = "governed"
    verbose_name = _("Governed parameters")

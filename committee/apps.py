from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CommitteeConfig(AppConfig):
    name = "committee"
    verbose_name = _("Committee")

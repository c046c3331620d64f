from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class PolicyConfig(AppConfig):
    name = "policy"
    verbose_name = _("Policy lab")

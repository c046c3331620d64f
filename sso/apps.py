from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class SsoConfig(AppConfig):
    name = "sso"
    verbose_name = _("Single sign-on")

    def ready(self) -> None:
        from sso import checks  # noqa: F401 (registers the system checks)

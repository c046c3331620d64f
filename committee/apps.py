from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CommitteeConfig(AppConfig):
    name = "committee"
    verbose_name = _("Committee")

    def ready(self) -> None:
        from django.core.signals import request_started

        from committee import checks, selectors  # noqa: F401 (checks registers the deploy checks)

        request_started.connect(selectors.viewer_roles_new_request, dispatch_uid="committee.viewer_roles")

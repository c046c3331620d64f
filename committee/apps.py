from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CommitteeConfig(AppConfig):
    name = "committee"
    verbose_name = _("Committee")

    def ready(self) -> None:
        from django.core.signals import request_started

        from allocations import signals as allocation_signals
        from committee import checks, selectors  # noqa: F401 (checks registers the deploy checks)
        from committee.services import chat

        request_started.connect(selectors.viewer_roles_new_request, dispatch_uid="committee.viewer_roles")
        allocation_signals.windows_sync_failed.connect(chat.on_windows_sync_failed, dispatch_uid="committee.chat")

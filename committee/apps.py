from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CommitteeConfig(AppConfig):
    name = "committee"
    verbose_name = _("Committee")

    def ready(self) -> None:
        from django.contrib.auth import get_user_model
        from django.core.signals import request_started
        from django.db.models.signals import pre_save

        from allocations import signals as allocation_signals
        from committee import checks, selectors, signals, texts  # noqa: F401 (checks registers the deploy checks, texts its codes)
        from committee.receivers import on_clock_ticked_retry_webhooks, user_deactivated_revoke_tokens
        from committee.services import chat

        request_started.connect(selectors.viewer_roles_new_request, dispatch_uid="committee.viewer_roles")
        allocation_signals.windows_sync_failed.connect(chat.on_windows_sync_failed, dispatch_uid="committee.chat")
        signals.clock_ticked.connect(on_clock_ticked_retry_webhooks, dispatch_uid="committee.webhook_retries")
        pre_save.connect(user_deactivated_revoke_tokens, sender=get_user_model(), dispatch_uid="committee.deactivated")

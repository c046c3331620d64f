from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CommitteeConfig(AppConfig):
    name = "committee"
    verbose_name = _("Committee")

    def ready(self) -> None:
        from django.core.signals import request_started

        from committee import selectors

        request_started.connect(selectors.viewer_roles_new_request, dispatch_uid="committee.viewer_roles")

        from django.contrib.auth import get_user_model
        from django.db.models.signals import pre_save

        from committee.receivers import user_deactivated_revoke_tokens

        pre_save.connect(user_deactivated_revoke_tokens, sender=get_user_model(), dispatch_uid="committee.deactivated")

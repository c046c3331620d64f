"""Personal API tokens for scripts."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _


class PersonalToken(models.Model):
    """A person's API token for scripts. Only a SHA-256 of the token is stored; it is shown once."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="personal_tokens")
    name = models.CharField(_("name"), max_length=100)
    # Unique, hence indexed: every token request looks the hash up.
    token_hash = models.CharField(_("token hash"), max_length=64, unique=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    last_used_at = models.DateTimeField(_("last used"), null=True, blank=True)
    # Set on creation to DOCKET_TOKEN_MAX_AGE_DAYS later; from then on the API answers 401 to the token.
    expires_at = models.DateTimeField(_("expires"))

    class Meta:
        ordering = ["user", "name"]
        verbose_name = _("personal token")
        verbose_name_plural = _("personal tokens")
        constraints = [
            models.UniqueConstraint(fields=["user", "name"], name="personaltoken_unique_name_per_user"),
            models.CheckConstraint(condition=~Q(name=""), name="personaltoken_name_required"),
        ]

    def __str__(self) -> str:
        return f"{self.user}: {self.name}"


# --- The clock's side: the outbox and notifications ----------------------------------------------

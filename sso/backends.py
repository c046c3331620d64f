"""Authentication backends: local passwords (possibly only for a break-glass superuser), OpenID Connect, LDAP.

`config/settings.py` lists the ones in use in AUTHENTICATION_BACKENDS. Every backend refuses an
inactive person, both at sign-in and for an existing session (`get_user`), so a person turned
inactive is signed out at their next request. Single sign-on never signs in a superuser: a local
superuser's username at the provider must not open the break-glass account.
"""

from __future__ import annotations

import enum
import logging
import threading
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import AnonymousUser, User
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import SuspiciousOperation, ValidationError
from django.db.models import QuerySet
from django.dispatch import receiver
from django.http import HttpRequest
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from committee.services import sso_manager_sync, sso_memberships_sync
from sso.oidc import claim_groups, claim_manager, ldap_enabled, manager_username, oidc_enabled, oidc_setting

logger = logging.getLogger(__name__)
_errors = threading.local()  # the directory errors seen by this thread's current session check


class DirectoryAnswer(enum.Enum):
    PRESENT = "present"  # still in the directory (groups synced)
    GONE = "gone"  # not found, or inactive in Docket
    UNKNOWN = "unknown"  # the directory could not be asked


class LocalPasswordBackend(ModelBackend):
    """Django's password check. With DOCKET_LOCAL_LOGIN off, only a superuser's password works (break-glass)."""

    def user_can_authenticate(self, user: User | AnonymousUser | None) -> bool:
        if not super().user_can_authenticate(user):
            return False
        return bool(settings.DOCKET_LOCAL_LOGIN or getattr(user, "is_superuser", False))


def _ldap_manager(ldap_user: Any) -> str | None:
    """The manager's username from the person's LDAP entry (LDAP_MANAGER_ATTRIBUTE, a DN): None when the attribute is
    off, "" when the entry names no manager."""
    name = getattr(settings, "LDAP_MANAGER_ATTRIBUTE", "")
    if not name:
        return None
    values = ldap_user.attrs.get(name.lower()) or ldap_user.attrs.get(name) or []
    return manager_username(values[0]) if values else ""


def _active(user: Any) -> Any:
    return user if user is not None and user.is_active else None


class DocketOIDCBackend(OIDCAuthenticationBackend):
    """OpenID Connect, authorization code flow with PKCE (mozilla-django-oidc), Docket's way.

    - The username is the claim OIDC_USERNAME_CLAIM (preferred_username by default); the person
      is found by it, or created on their first sign-in (with no usable local password).
    - The groups claim (OIDC_GROUPS_CLAIM) sets their single sign-on memberships and seats at
      every sign-in (committee.services.sso_memberships_sync), the manager claim (OIDC_MANAGER_CLAIM) their
      reporting line (committee.services.sso_manager_sync).
    - The claims are the ID token's and the userinfo endpoint's together (userinfo wins).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # The parent reads every endpoint here; Django builds each backend for every sign-in, a local
        # one too, so reading (and discovering) endpoints waits until an OpenID sign-in needs them.
        self.UserModel = get_user_model()

    get_settings = staticmethod(oidc_setting)

    @property
    def OIDC_OP_TOKEN_ENDPOINT(self) -> str:
        return str(oidc_setting("OIDC_OP_TOKEN_ENDPOINT"))

    @property
    def OIDC_OP_USER_ENDPOINT(self) -> str:
        return str(oidc_setting("OIDC_OP_USER_ENDPOINT"))

    @property
    def OIDC_OP_JWKS_ENDPOINT(self) -> str:
        return str(oidc_setting("OIDC_OP_JWKS_ENDPOINT"))

    @property
    def OIDC_RP_CLIENT_ID(self) -> str:
        return str(settings.OIDC_RP_CLIENT_ID)

    @property
    def OIDC_RP_CLIENT_SECRET(self) -> str:
        return str(settings.OIDC_RP_CLIENT_SECRET)

    @property
    def OIDC_RP_SIGN_ALGO(self) -> str:
        return str(settings.OIDC_RP_SIGN_ALGO)

    @property
    def OIDC_RP_IDP_SIGN_KEY(self) -> str | None:
        return None  # always the provider's JWKS

    def authenticate(self, request: HttpRequest | None, **kwargs: Any) -> User | None:
        # Only the callback view's call (nonce and code verifier, no password) is an OpenID sign-in; without
        # this check a password form posted to a URL with ?code=&state= would reach the provider's token endpoint.
        if not oidc_enabled() or "nonce" not in kwargs or "password" in kwargs or "username" in kwargs:
            return None
        return _active(super().authenticate(request, **kwargs))

    def get_userinfo(self, access_token: str, id_token: str, payload: dict[str, Any]) -> dict[str, Any]:
        userinfo = super().get_userinfo(access_token, id_token, payload)
        return {**payload, **userinfo}

    def _username(self, claims: dict[str, Any]) -> str:
        value = claims.get(settings.OIDC_USERNAME_CLAIM)
        if not isinstance(value, str) or not value.strip():
            raise SuspiciousOperation(f"the provider sent no {settings.OIDC_USERNAME_CLAIM} claim")
        username = value.strip()
        try:
            UnicodeUsernameValidator()(username)
        except ValidationError:
            raise SuspiciousOperation(f"the {settings.OIDC_USERNAME_CLAIM} claim is not a valid username") from None
        if len(username) > 150:
            raise SuspiciousOperation(f"the {settings.OIDC_USERNAME_CLAIM} claim is longer than 150 characters")
        return username

    def verify_claims(self, claims: dict[str, Any]) -> bool:
        self._username(claims)
        # An e-mail address as the username must be one the provider has verified.
        return not (settings.OIDC_USERNAME_CLAIM == "email" and claims.get("email_verified") is False)

    def filter_users_by_claims(self, claims: dict[str, Any]) -> QuerySet[User]:
        users = User.objects.filter(username=self._username(claims))
        if any(user.is_superuser for user in users):
            raise SuspiciousOperation("a superuser signs in with the local password only")
        return users

    def create_user(self, claims: dict[str, Any]) -> User:
        user = User(username=self._username(claims))
        self._copy_profile(user, claims)
        user.set_unusable_password()
        user.save()
        logger.info("sso: created %s on first OpenID Connect sign-in", user.username)
        return self._sync(user, claims)

    def update_user(self, user: User, claims: dict[str, Any]) -> User:
        if self._copy_profile(user, claims):
            user.save(update_fields=["email", "first_name", "last_name"])
        return self._sync(user, claims)

    @staticmethod
    def _copy_profile(user: User, claims: dict[str, Any]) -> bool:
        changed = False
        for field, claim, limit in (("email", "email", 254), ("first_name", "given_name", 150),
                                    ("last_name", "family_name", 150)):
            value = claims.get(claim)
            if isinstance(value, str) and value[:limit] != getattr(user, field):
                setattr(user, field, value[:limit])
                changed = True
        return changed

    @staticmethod
    def _sync(user: User, claims: dict[str, Any]) -> User:
        groups = claim_groups(claims)
        if groups is None:
            logger.warning("sso: no %s claim for %s; memberships left as they are",
                           settings.OIDC_GROUPS_CLAIM, user.username)
        elif user.is_active:
            sso_memberships_sync(user=user, groups=groups)
        if user.is_active:
            sso_manager_sync(user=user, manager=claim_manager(claims))
        return user

    def get_user(self, user_id: Any) -> User | None:
        return _active(super().get_user(user_id))


try:
    from django_auth_ldap.backend import LDAPBackend
except ImportError:  # python-ldap is optional (requirements-ldap.txt): without it LDAP sign-in is off
    LDAPBackend = None


if LDAPBackend is None:

    class DocketLDAPBackend(ModelBackend):
        """LDAP sign-in without its packages installed: stands aside (settings refuse LDAP_SERVER_URI then)."""

        def authenticate(self, request: HttpRequest | None, username: str | None = None,
                         password: str | None = None, **kwargs: Any) -> User | None:
            return None

        def get_user(self, user_id: Any) -> User | None:
            return None

        def recheck(self, user: User) -> DirectoryAnswer:
            return DirectoryAnswer.UNKNOWN

else:

    class DocketLDAPBackend(LDAPBackend):  # type: ignore[no-redef]
        """LDAP (django-auth-ldap): the sign-in form's username and password, checked by binding as the person.

        Their LDAP groups (AUTH_LDAP_GROUP_SEARCH, by cn) set their single sign-on memberships and seats
        through the same mapping as OpenID Connect's groups claim; their manager attribute (LDAP_MANAGER_ATTRIBUTE)
        their reporting line.
        """

        def authenticate(self, request: HttpRequest | None, username: str | None = None, password: str | None = None,
                         **kwargs: Any) -> User | None:
            if not ldap_enabled():
                return None
            return super().authenticate(request, username=username, password=password, **kwargs)

        def authenticate_ldap_user(self, ldap_user: Any, password: str) -> User | None:
            user = super().authenticate_ldap_user(ldap_user, password)
            if user is None or not user.is_active:
                return None
            sso_memberships_sync(user=user, groups=sorted(ldap_user.group_names))
            sso_manager_sync(user=user, manager=_ldap_manager(ldap_user))
            return user

        def get_or_build_user(self, username: str, ldap_user: Any) -> tuple[User, bool]:
            user, built = super().get_or_build_user(username, ldap_user)
            if not built and user.is_superuser:
                # Refused before django-auth-ldap copies the directory's attributes onto the account.
                raise ldap_user.AuthenticationFailed("a superuser signs in with the local password only")
            return user, built

        def get_user(self, user_id: Any) -> User | None:
            return _active(super().get_user(user_id))

        def recheck(self, user: User) -> DirectoryAnswer:
            """Ask the directory (with the service bind) whether `user` is still there; sync their groups if so."""
            _errors.seen = []
            try:
                found = self.populate_user(user.get_username())  # re-reads attributes and groups
            finally:
                errors, _errors.seen = _errors.seen, None
            if errors:
                logger.warning("sso: the directory did not answer the session check of %s: %s", user, errors[0])
                return DirectoryAnswer.UNKNOWN
            if found is None or not found.is_active:
                return DirectoryAnswer.GONE
            sso_memberships_sync(user=found, groups=sorted(found.ldap_user.group_names))
            sso_manager_sync(user=found, manager=_ldap_manager(found.ldap_user))
            return DirectoryAnswer.PRESENT

    from django_auth_ldap.backend import ldap_error

    @receiver(ldap_error, dispatch_uid="sso.backends.ldap_error")
    def _note_ldap_error(sender: Any, context: str, exception: Exception, **kwargs: Any) -> None:
        # django-auth-ldap reports a directory that fails only through this signal (and a log line): a session
        # check must tell "not found" from "could not ask". Only the thread doing a check listens.
        seen = getattr(_errors, "seen", None)
        if seen is not None:
            seen.append(f"{context}: {exception}")

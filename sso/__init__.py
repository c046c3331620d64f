"""Single sign-on: OpenID Connect (mozilla-django-oidc) and LDAP (django-auth-ldap), configured from the environment.

This app sits above `committee` (it calls `committee.services.sso_memberships_sync` at every
sign-in); nothing below imports it. See docs/deploy.md for the set-up.
"""

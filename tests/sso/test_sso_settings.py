"""Single sign-on is configured from the environment; a half-done configuration stops the start with a clear message."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from tests.conftest import require
from tests.processes import ROOT

PRINT = """
import django, json, os
os.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings'
django.setup()
from django.conf import settings
s = settings
print(json.dumps({
    'user_base': s.AUTH_LDAP_USER_SEARCH.base_dn, 'user_filter': s.AUTH_LDAP_USER_SEARCH.filterstr,
    'group_base': s.AUTH_LDAP_GROUP_SEARCH.base_dn, 'group_filter': s.AUTH_LDAP_GROUP_SEARCH.filterstr,
    'group_type': type(s.AUTH_LDAP_GROUP_TYPE).__name__, 'bind': s.AUTH_LDAP_BIND_DN, 'tls': s.AUTH_LDAP_START_TLS,
    'issuer': s.OIDC_ISSUER, 'pkce': s.OIDC_USE_PKCE, 'groups_claim': s.OIDC_GROUPS_CLAIM,
    'local': s.DOCKET_LOCAL_LOGIN,
}))
"""


def require_python_ldap() -> None:
    """LDAP sign-in is optional: its package builds only where the LDAP headers are (make install-dev)."""
    require(importlib.util.find_spec("ldap") is not None,
            "python-ldap (requirements-ldap.txt, built against libldap2-dev and libsasl2-dev)")


def start(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", PRINT], env={"PATH": "/usr/bin:/bin", "DEBUG": "1", **env},
                          capture_output=True, text=True, check=False, cwd=ROOT)


def test_ldap_and_openid_settings_come_from_the_environment():
    require_python_ldap()
    result = start(
        LDAP_SERVER_URI="ldaps://ldap.example.com", LDAP_BIND_DN="cn=docket,dc=example,dc=com",
        LDAP_BIND_PASSWORD="x", LDAP_USER_SEARCH_BASE="ou=people,dc=example,dc=com",
        LDAP_USER_FILTER="(sAMAccountName=%(user)s)", LDAP_GROUP_SEARCH_BASE="ou=groups,dc=example,dc=com",
        LDAP_GROUP_TYPE="posixGroup", LDAP_START_TLS="1",
        OIDC_ISSUER="https://sso.example.com/realms/company/", OIDC_RP_CLIENT_ID="docket", OIDC_RP_CLIENT_SECRET="s",
        OIDC_GROUPS_CLAIM="roles", DOCKET_LOCAL_LOGIN="0",
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "user_base": "ou=people,dc=example,dc=com", "user_filter": "(sAMAccountName=%(user)s)",
        "group_base": "ou=groups,dc=example,dc=com", "group_filter": "(objectClass=posixGroup)",
        "group_type": "PosixGroupType", "bind": "cn=docket,dc=example,dc=com", "tls": True,
        "issuer": "https://sso.example.com/realms/company", "pkce": True, "groups_claim": "roles", "local": False,
    }


HALF_CONFIGURED = [
    ({"OIDC_RP_CLIENT_ID": "docket", "OIDC_RP_CLIENT_SECRET": "s"}, "set OIDC_ISSUER too"),
    ({"OIDC_ISSUER": "https://sso.example.com", "OIDC_RP_CLIENT_ID": "docket"}, "OIDC_RP_CLIENT_SECRET is not"),
    ({"OIDC_ISSUER": "sso.example.com"}, "OIDC_ISSUER must be an http:// or https:// URL"),
    ({"LDAP_SERVER_URI": "ldap://ldap.example.com"}, "set LDAP_USER_SEARCH_BASE"),
    ({"LDAP_SERVER_URI": "ldap://x", "LDAP_USER_SEARCH_BASE": "ou=p", "LDAP_GROUP_TYPE": "groupofnames"},
     "LDAP_GROUP_TYPE must be one of"),
    ({"DOCKET_LOCAL_LOGIN": "no"}, "DOCKET_LOCAL_LOGIN must be one of"),
]


@pytest.mark.parametrize(("env", "message"), HALF_CONFIGURED, ids=[message for _, message in HALF_CONFIGURED])
def test_a_half_configured_provider_stops_the_start_naming_what_is_missing(env, message):
    if "LDAP_SERVER_URI" in env:
        require_python_ldap()  # without it the start stops earlier, naming requirements-ldap.txt
    result = start(**env)
    assert result.returncode != 0 and message in result.stderr, (env, result.stderr[-500:])

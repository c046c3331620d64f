"""Real identity providers for the single sign-on tests: an OpenID provider (oidc-provider on Node.js) and a slapd.

Both are started by the test on 127.0.0.1 and a free port, as child processes in the foreground
whose pid the test holds, and stopped by that pid (tests.processes.stop) when the block ends.
Locally a missing `node`/`npm` or `slapd` skips the test; in CI (`CI=true`) it fails.

The provider's package (tests/sso/package.json, oidc-provider pinned) is installed with `npm
install` into a cache folder the first time (DOCKET_TEST_CACHE, default ~/.cache/docket-tests),
and reused after; the folder's name carries a hash of package.json, so a new pin installs anew.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import importlib.util
import json
import os
import secrets
import shutil
import subprocess
import tempfile
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.clock import child_env
from tests.conftest import require
from tests.processes import free_port, http_status, log_tail, require_tool, stop, wait_until

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("DOCKET_TEST_CACHE", Path.home() / ".cache" / "docket-tests"))
SLAPD = Path(os.environ.get("SLAPD", "/usr/sbin/slapd"))
LDAP_SCHEMA = Path("/etc/ldap/schema")
LDAP_MODULES = Path("/usr/lib/ldap")


# --- OpenID Connect ---------------------------------------------------------------------------


def provider_package() -> Path:
    """The folder with oidc-provider installed and provider.mjs beside it (installed once, under a lock)."""
    require_tool("node", "Node.js (apt-get install nodejs)")
    require_tool("npm", "npm (apt-get install npm)")
    manifest = (HERE / "package.json").read_bytes()
    folder = CACHE / f"oidc-provider-{hashlib.sha256(manifest).hexdigest()[:12]}"
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two xdist workers must not install into one folder at once
        if not (folder / "node_modules" / "oidc-provider" / "package.json").exists():
            (folder / "package.json").write_bytes(manifest)
            done = subprocess.run(
                ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=folder, capture_output=True, text=True, timeout=300, check=False,
            )
            assert done.returncode == 0, f"npm install of the test provider failed:\n{done.stdout}\n{done.stderr}"
        shutil.copyfile(HERE / "provider.mjs", folder / "provider.mjs")
    return folder


@dataclass
class OpenIdProvider:
    issuer: str
    client_id: str
    client_secret: str
    accounts_file: Path
    process: subprocess.Popen[bytes]
    log: Path

    def set_accounts(self, accounts: dict[str, dict[str, Any]]) -> None:
        """Who the provider knows now: {username: {"password": ..., "claims": {...}, "disabled": bool}}."""
        temporary = self.accounts_file.with_suffix(".tmp")
        temporary.write_text(json.dumps(accounts))
        temporary.replace(self.accounts_file)  # atomic: the provider never reads half a file

    def settings(self) -> dict[str, Any]:
        """Docket's settings for this provider (what the environment would say in production)."""
        return {
            "OIDC_ISSUER": self.issuer,
            "OIDC_RP_CLIENT_ID": self.client_id,
            "OIDC_RP_CLIENT_SECRET": self.client_secret,
            "OIDC_PROVIDER_NAME": "Test provider",
        }


@contextlib.contextmanager
def openid_provider(*, redirect_uri: str, accounts: dict[str, dict[str, Any]]) -> Iterator[OpenIdProvider]:
    folder = provider_package()
    root = Path(tempfile.mkdtemp(prefix="docket-oidc-"))
    port = free_port()
    issuer = f"http://127.0.0.1:{port}"
    secret = secrets.token_urlsafe(24)
    accounts_file = root / "accounts.json"
    accounts_file.write_text(json.dumps(accounts))
    (root / "config.json").write_text(json.dumps({
        "port": port,
        "issuer": issuer,
        "client": {
            "client_id": "docket", "client_secret": secret, "redirect_uris": [redirect_uri],
            # Where the provider sends a person back after Docket's sign-out ended their session there.
            "post_logout_redirect_uris": [urllib.parse.urljoin(redirect_uri, "/accounts/login/")],
        },
        "accounts": str(accounts_file),
    }))
    log = root / "provider.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            ["node", str(folder / "provider.mjs"), str(root / "config.json")],
            cwd=folder, env=child_env(dict(os.environ)), stdout=sink, stderr=subprocess.STDOUT,
        )
    try:
        def up() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"the OpenID provider exited with {process.returncode}:\n{log_tail(log)}")
            return http_status(f"{issuer}/.well-known/openid-configuration") == 200

        wait_until(up, timeout=30, what=f"the OpenID provider answering on {issuer}", interval=0.1)
        yield OpenIdProvider(issuer=issuer, client_id="docket", client_secret=secret, accounts_file=accounts_file,
                             process=process, log=log)
    finally:
        stop(process)
        if not os.environ.get("DOCKET_TEST_KEEP_LOGS"):  # =1 keeps the provider's log and files for a look
            shutil.rmtree(root, ignore_errors=True)


# --- LDAP -------------------------------------------------------------------------------------

LDAP_SUFFIX = "dc=lab,dc=test"
LDAP_ADMIN = f"cn=admin,{LDAP_SUFFIX}"


def ssha(password: str) -> str:
    """An OpenLDAP {SSHA} password hash (what slappasswd writes)."""
    salt = secrets.token_bytes(8)
    return "{SSHA}" + base64.b64encode(hashlib.sha1(password.encode() + salt).digest() + salt).decode()  # noqa: S324


@dataclass
class Directory:
    uri: str
    admin_password: str
    process: subprocess.Popen[bytes]
    log: Path

    def connection(self) -> Any:
        import ldap

        conn = ldap.initialize(self.uri)
        conn.simple_bind_s(LDAP_ADMIN, self.admin_password)
        return conn

    def add_person(self, uid: str, *, password: str, email: str, given: str, family: str, manager: str = "") -> str:
        from ldap import modlist

        dn = f"uid={uid},ou=people,{LDAP_SUFFIX}"
        entry = {
            "objectClass": [b"inetOrgPerson"],
            "uid": [uid.encode()],
            "cn": [f"{given} {family}".encode()],
            "givenName": [given.encode()],
            "sn": [family.encode()],
            "mail": [email.encode()],
            "userPassword": [ssha(password).encode()],
        }
        if manager:  # inetOrgPerson's manager: a DN
            entry["manager"] = [manager.encode()]
        self.connection().add_s(dn, modlist.addModlist(entry))
        return dn

    def set_manager(self, dn: str, manager: str) -> None:
        """Set (or, with "", remove) a person's manager attribute."""
        import ldap

        value = [manager.encode()] if manager else None
        self.connection().modify_s(dn, [(ldap.MOD_REPLACE, "manager", value)])

    def remove(self, dn: str) -> None:
        """Delete an entry (a person who left the company)."""
        self.connection().delete_s(dn)

    def clear(self) -> None:
        """Delete every person and group (ou=people and ou=groups stay): the directory as it started, so that one
        slapd serves a whole session and each test begins with an empty company."""
        import ldap

        conn = self.connection()
        for unit in ("people", "groups"):
            for dn, _attributes in conn.search_s(f"ou={unit},{LDAP_SUFFIX}", ldap.SCOPE_ONELEVEL, attrlist=["1.1"]):
                conn.delete_s(dn)

    def set_group(self, name: str, member_dns: list[str]) -> None:
        """Create the groupOfNames `name` with exactly these members (replacing what it had)."""
        import ldap
        from ldap import modlist

        dn = f"cn={name},ou=groups,{LDAP_SUFFIX}"
        conn = self.connection()
        members = [m.encode() for m in member_dns] or [LDAP_ADMIN.encode()]  # groupOfNames needs one member
        try:
            conn.add_s(dn, modlist.addModlist({"objectClass": [b"groupOfNames"], "cn": [name.encode()],
                                               "member": members}))
        except ldap.ALREADY_EXISTS:
            conn.modify_s(dn, [(ldap.MOD_REPLACE, "member", members)])

    def settings(self) -> dict[str, Any]:
        """Docket's settings for this directory (config/settings.py builds the same from LDAP_* variables)."""
        import ldap
        from django_auth_ldap.config import GroupOfNamesType, LDAPSearch

        return {
            "AUTH_LDAP_SERVER_URI": self.uri,
            "AUTH_LDAP_BIND_DN": LDAP_ADMIN,
            "AUTH_LDAP_BIND_PASSWORD": self.admin_password,
            "AUTH_LDAP_USER_SEARCH": LDAPSearch(f"ou=people,{LDAP_SUFFIX}", ldap.SCOPE_SUBTREE, "(uid=%(user)s)"),
            "AUTH_LDAP_GROUP_SEARCH": LDAPSearch(f"ou=groups,{LDAP_SUFFIX}", ldap.SCOPE_SUBTREE,
                                                 "(objectClass=groupOfNames)"),
            "AUTH_LDAP_GROUP_TYPE": GroupOfNamesType(),
            "AUTH_LDAP_USER_ATTR_MAP": {"first_name": "givenName", "last_name": "sn", "email": "mail"},
            "AUTH_LDAP_ALWAYS_UPDATE_USER": True,
            "AUTH_LDAP_CONNECTION_OPTIONS": {ldap.OPT_NETWORK_TIMEOUT: 5, ldap.OPT_TIMEOUT: 5},
        }


@contextlib.contextmanager
def private_slapd() -> Iterator[Directory]:
    """A slapd of its own (mdb database in a temporary folder), with ou=people and ou=groups under dc=lab,dc=test."""
    require_tool(SLAPD, "slapd (apt-get install slapd ldap-utils; preseed slapd/no_configuration, see .ci/run)")
    require_tool(LDAP_SCHEMA / "inetorgperson.schema", "OpenLDAP's schema files (apt-get install slapd)")
    require(importlib.util.find_spec("ldap") is not None and importlib.util.find_spec("django_auth_ldap") is not None,
            "python-ldap and django-auth-ldap (pip install -r requirements-ldap.txt)")
    try:
        import ldap
        from ldap import modlist
    except ImportError:  # pragma: no cover (python-ldap is in requirements.txt)
        require_tool("/nonexistent/python-ldap", "python-ldap (pip install -r requirements.txt)")
        raise
    root = Path(tempfile.mkdtemp(prefix="docket-slapd-"))
    (root / "db").mkdir()
    port = free_port()
    admin_password = secrets.token_urlsafe(12)
    schemas = "\n".join(f"include {LDAP_SCHEMA / name}.schema" for name in ("core", "cosine", "inetorgperson", "nis"))
    (root / "slapd.conf").write_text(f"""{schemas}
pidfile {root}/slapd.pid
argsfile {root}/slapd.args
modulepath {LDAP_MODULES}
moduleload back_mdb
database mdb
maxsize 104857600
suffix "{LDAP_SUFFIX}"
rootdn "{LDAP_ADMIN}"
rootpw {ssha(admin_password)}
directory {root}/db
index objectClass eq
index uid,member eq
access to attrs=userPassword by self write by anonymous auth by * none
access to * by * read
""")
    uri = f"ldap://127.0.0.1:{port}"
    log = root / "slapd.log"
    with log.open("wb") as sink:
        # -d 0: stay in the foreground (no fork), so the pid the test holds is slapd's own.
        process = subprocess.Popen([str(SLAPD), "-d", "0", "-f", str(root / "slapd.conf"), "-h", f"{uri}/"],
                                   stdout=sink, stderr=subprocess.STDOUT)
    try:
        def up() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"slapd exited with {process.returncode}:\n{log_tail(log)}")
            try:
                conn = ldap.initialize(uri)
                conn.simple_bind_s(LDAP_ADMIN, admin_password)
            except ldap.SERVER_DOWN:
                return False
            return True

        wait_until(up, timeout=20, what=f"slapd answering on {uri}", interval=0.1)
        directory = Directory(uri=uri, admin_password=admin_password, process=process, log=log)
        conn = directory.connection()
        conn.add_s(LDAP_SUFFIX, modlist.addModlist({"objectClass": [b"dcObject", b"organization"], "dc": [b"lab"],
                                                    "o": [b"Lab"]}))
        for unit in ("people", "groups"):
            conn.add_s(f"ou={unit},{LDAP_SUFFIX}", modlist.addModlist({"objectClass": [b"organizationalUnit"],
                                                                       "ou": [unit.encode()]}))
        yield directory
    finally:
        stop(process)
        shutil.rmtree(root, ignore_errors=True)

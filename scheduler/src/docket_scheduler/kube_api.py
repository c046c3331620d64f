"""The Kubernetes API server as the Kueue sync talks to it: its address and credentials (a kubeconfig, or a Pod's
ServiceAccount) and the calls the sync makes (server-side apply, list by label, delete), over HTTPS with the
standard library only. PyYAML is needed only to read a YAML kubeconfig (JSON is YAML).
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import ssl
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docket_scheduler import __version__
from docket_scheduler.client import open_url

FIELD_MANAGER = "docket"
APPLY_CONTENT_TYPE = "application/apply-patch+yaml"
USER_AGENT = f"docket-kueue-sync/{__version__}"
PLURALS = {
    "WorkloadPriorityClass": "workloadpriorityclasses",
    "Cohort": "cohorts",
    "ResourceFlavor": "resourceflavors",
    "ClusterQueue": "clusterqueues",
    "LocalQueue": "localqueues",
}
SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


class KubeError(Exception):
    """The API server could not be reached or refused a request; `status` is its HTTP status (0: none)."""

    def __init__(self, message: str, *, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


# --- the API server's address and credentials ----------------------------------------------


@dataclass(frozen=True)
class KubeConfig:
    """Where the API server is and how to authenticate: a bearer token, a client certificate, or both."""

    server: str
    context: ssl.SSLContext | None  # None for http:// (tests and local proxies only)
    token: str | None = None
    source: str = ""


def load_kubeconfig(path: str | os.PathLike[str], *, context: str | None = None) -> KubeConfig:
    """Read a kubeconfig the way kubectl does for the parts Docket uses.

    The context is `context` or `current-context`; from its cluster `server`,
    `certificate-authority` / `certificate-authority-data`, `insecure-skip-tls-verify`;
    from its user `token` / `tokenFile` and `client-certificate(-data)` + `client-key(-data)`.
    Relative paths are relative to the kubeconfig's folder, as kubectl reads them. Exec and
    auth-provider plugins are refused with a clear message: use a ServiceAccount token.
    """
    file = Path(path).expanduser()
    try:
        text = file.read_text()
    except OSError as exc:
        raise KubeError(f"cannot read kubeconfig {file}: {exc}") from None
    config = _parse_kubeconfig(text, file)
    name = context or config.get("current-context")
    if not name:
        raise KubeError(f"{file}: no current-context; pass --context")
    ctx = _named(config, "contexts", name, file).get("context") or {}
    cluster = _named(config, "clusters", ctx.get("cluster"), file).get("cluster") or {}
    user: dict[str, Any] = {}
    if ctx.get("user"):  # a context without a user: no credentials (an authenticating proxy)
        user = _named(config, "users", ctx["user"], file).get("user") or {}
    if "exec" in user or "auth-provider" in user:
        raise KubeError(
            f"{file}: user {ctx.get('user')!r} authenticates with an exec or auth-provider plugin, which kueue_sync "
            "does not run; give it a ServiceAccount token (token or tokenFile) or a client certificate"
        )
    server = cluster.get("server")
    if not isinstance(server, str) or not server:
        raise KubeError(f"{file}: cluster {ctx.get('cluster')!r} has no server")

    def resolve(value: str) -> Path:
        candidate = Path(value).expanduser()
        return candidate if candidate.is_absolute() else file.parent / candidate

    ssl_context = None
    if server.startswith("https://"):
        try:
            ssl_context = _tls(cluster, user, resolve, file)
        except (ssl.SSLError, OSError) as exc:  # a PEM that does not parse, a key that does not match, no file
            raise KubeError(f"{file}: cannot use its certificates: {exc}") from None
    elif not server.startswith("http://"):
        raise KubeError(f"{file}: server {server!r} is not an http(s) URL")

    token = user.get("token")
    if not token and user.get("tokenFile"):
        try:
            token = resolve(user["tokenFile"]).read_text().strip()
        except OSError as exc:
            raise KubeError(f"{file}: cannot read tokenFile: {exc}") from None
    return KubeConfig(server=server.rstrip("/"), context=ssl_context, token=token or None, source=f"{file} ({name})")


def in_cluster_config(directory: Path = SERVICE_ACCOUNT_DIR, env: Mapping[str, str] | None = None) -> KubeConfig:
    """The Pod's own ServiceAccount: its token and CA, and the API server from KUBERNETES_SERVICE_HOST/PORT."""
    env = os.environ if env is None else env
    host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT", "443")
    if not host:
        raise KubeError("--in-cluster: KUBERNETES_SERVICE_HOST is not set (not running in a Pod?)")
    try:
        token = (directory / "token").read_text().strip()
    except OSError as exc:
        raise KubeError(f"--in-cluster: cannot read the ServiceAccount token: {exc}") from None
    context = ssl.create_default_context(cafile=str(directory / "ca.crt"))
    host = f"[{host}]" if ":" in host else host
    return KubeConfig(server=f"https://{host}:{port}", context=context, token=token, source="in-cluster")


def add_kube_options(parser: argparse.ArgumentParser) -> None:
    """Where the API server is, for every program that talks to it (docket-kueue-sync, docket-elastic-agent)."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--kubeconfig", default=_first_path(os.environ.get("KUBECONFIG", "")),
                       help="kubeconfig file (default: the first file in $KUBECONFIG, else ~/.kube/config)")
    where.add_argument("--in-cluster", action="store_true", help="use the Pod's ServiceAccount")
    parser.add_argument("--context", help="kubeconfig context (default: its current-context)")


def kube_config(args: argparse.Namespace) -> KubeConfig:
    """The API server and credentials the options of `add_kube_options` name."""
    if args.in_cluster:
        return in_cluster_config()
    return load_kubeconfig(args.kubeconfig or "~/.kube/config", context=args.context)


def _first_path(value: str) -> str | None:
    """$KUBECONFIG may list several files (kubectl merges them); the programs read the first."""
    return next((part for part in value.split(os.pathsep) if part), None)


def _parse_kubeconfig(text: str, file: Path) -> dict[str, Any]:
    try:
        config: Any = json.loads(text)
    except ValueError:
        try:
            import yaml
        except ImportError:
            raise KubeError(
                f"{file} is YAML: install PyYAML (Debian: python3-yaml) or convert it to JSON "
                "(kubectl config view --raw -o json)"
            ) from None
        try:
            config = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise KubeError(f"{file} is not a readable kubeconfig: {exc}") from None
    if not isinstance(config, dict):
        raise KubeError(f"{file} is not a kubeconfig (not a mapping)")
    return config


def _named(config: Mapping[str, Any], section: str, name: Any, file: Path) -> dict[str, Any]:
    for item in config.get(section) or []:
        if isinstance(item, dict) and item.get("name") == name:
            return item
    raise KubeError(f"{file}: no {section[:-1]} named {name!r}")


def _b64(value: Any, what: str) -> str:
    try:
        return base64.b64decode(str(value), validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        raise KubeError(f"kubeconfig {what} is not base64-encoded PEM") from None


def _tls(
    cluster: Mapping[str, Any], user: Mapping[str, Any], resolve: Callable[[str], Path], file: Path
) -> ssl.SSLContext:
    context = ssl.create_default_context()
    if cluster.get("insecure-skip-tls-verify"):
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif cluster.get("certificate-authority-data"):
        context.load_verify_locations(cadata=_b64(cluster["certificate-authority-data"], "certificate-authority-data"))
    elif cluster.get("certificate-authority"):
        context.load_verify_locations(cafile=str(resolve(cluster["certificate-authority"])))
    _load_client_cert(context, user, resolve, file)
    return context


def _load_client_cert(
    context: ssl.SSLContext, user: Mapping[str, Any], resolve: Callable[[str], Path], file: Path
) -> None:
    cert, key = user.get("client-certificate-data"), user.get("client-key-data")
    if cert or key:
        if not (cert and key):
            raise KubeError(f"{file}: client-certificate-data and client-key-data go together")
        # ssl loads certificates from files only: write them to a private folder and remove it at once.
        with tempfile.TemporaryDirectory(prefix="docket-kueue-") as folder:
            cert_file, key_file = Path(folder) / "client.crt", Path(folder) / "client.key"
            pairs = ((cert_file, cert, "client-certificate-data"), (key_file, key, "client-key-data"))
            for target, value, what in pairs:
                target.touch(mode=0o600)
                target.write_text(_b64(value, what))
            context.load_cert_chain(str(cert_file), str(key_file))
    elif user.get("client-certificate") or user.get("client-key"):
        if not (user.get("client-certificate") and user.get("client-key")):
            raise KubeError(f"{file}: client-certificate and client-key go together")
        context.load_cert_chain(str(resolve(user["client-certificate"])), str(resolve(user["client-key"])))


# --- the API server ---------------------------------------------------------------------------


def object_path(obj: Mapping[str, Any]) -> str:
    """The REST path of a Kueue object: /apis/<group>/<version>/[namespaces/<ns>/]<plural>/<name>."""
    plural = PLURALS[obj["kind"]]
    metadata = obj["metadata"]
    namespace = metadata.get("namespace")
    scope = f"namespaces/{urllib.parse.quote(namespace)}/" if namespace else ""
    return f"/apis/{obj['apiVersion']}/{scope}{plural}/{urllib.parse.quote(metadata['name'])}"


def describe(obj: Mapping[str, Any]) -> str:
    metadata = obj["metadata"]
    where = f"{metadata['namespace']}/" if metadata.get("namespace") else ""
    return f"{obj['kind']} {where}{metadata['name']}"


@dataclass
class KubeClient:
    """The four calls kueue_sync makes: apply, list by label, delete, over urllib."""

    config: KubeConfig
    timeout_s: float = 30.0

    def apply(self, obj: Mapping[str, Any], *, dry_run: bool = False) -> tuple[int, dict[str, Any]]:
        """Server-side apply `obj`; (HTTP status: 201 created, 200 applied, the object the server holds)."""
        query = {"fieldManager": FIELD_MANAGER, "force": "true"}
        if dry_run:
            query["dryRun"] = "All"
        body = json.dumps(obj, separators=(",", ":")).encode()
        return self._request("PATCH", object_path(obj), query=query, body=body, content_type=APPLY_CONTENT_TYPE)

    def list(self, api_version: str, kind: str, *, label_selector: str) -> list[dict[str, Any]]:
        """Every object of `kind` (all namespaces) whose labels match `label_selector`."""
        path = f"/apis/{api_version}/{PLURALS[kind]}"
        _status, page = self._request("GET", path, query={"labelSelector": label_selector})
        items = page.get("items")
        if not isinstance(items, list):
            raise KubeError(f"GET {path}: the answer has no items list")
        return [item for item in items if isinstance(item, dict)]

    def delete(self, obj: Mapping[str, Any]) -> None:
        try:
            self._request("DELETE", object_path(obj))
        except KubeError as exc:
            if exc.status != 404:  # already gone: what we wanted
                raise

    def _request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
    ) -> tuple[int, dict[str, Any]]:
        url = self.config.server + path + ("?" + urllib.parse.urlencode(query) if query else "")
        # The server comes from the operator's kubeconfig, http(s) only (load_kubeconfig checks).
        request = urllib.request.Request(url, data=body, method=method)  # noqa: S310
        request.add_header("Accept", "application/json")
        request.add_header("User-Agent", USER_AGENT)
        if content_type:
            request.add_header("Content-Type", content_type)
        if self.config.token:
            request.add_header("Authorization", f"Bearer {self.config.token}")
        try:
            with open_url(request, timeout_s=self.timeout_s, context=self.config.context) as response:
                return response.status, _json(response.read())
        except urllib.error.HTTPError as exc:
            raise KubeError(f"{method} {path}: {status_message(exc.code, exc.read())}", status=exc.code) from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            raise KubeError(f"{method} {path}: {getattr(exc, 'reason', exc) or 'no whole answer in time'}") from None


def _json(body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(body) if body else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def status_message(code: int, body: bytes) -> str:
    """The API server's own words from a `Status` body: reason, message and each cause's field."""
    status = _json(body)
    if status.get("kind") != "Status":
        text = body[:300].decode(errors="replace").strip()
        return f"HTTP {code}" + (f" {text}" if text else "")
    message = f"HTTP {code} {status.get('reason') or ''}: {status.get('message') or ''}".replace(" :", ":")
    causes = (status.get("details") or {}).get("causes") or []
    fields = [f"{c.get('field')}: {c.get('message')}" for c in causes if isinstance(c, dict) and c.get("field")]
    # The message of a 422 usually repeats its causes; add them only when it does not.
    extra = [cause for cause in fields if cause.split(": ", 1)[-1] not in message]
    return message + ("; " + "; ".join(extra) if extra else "")

"""A stand-in Kubernetes API server for kueue_sync's tests: HTTPS, records every request, answers
server-side apply, list by label and delete the way kube-apiserver does.

No real API server can run here (no kube-apiserver or envtest binary in Debian, PyPI or npm;
docs/adapters.md). What this one does is what kueue_sync relies on, taken from the Kubernetes
API conventions: `PATCH` with `application/apply-patch+yaml` and a `fieldManager` creates the
object (201) or applies onto it (200), and a repeated identical apply leaves its
`resourceVersion` alone; `dryRun=All` validates and stores nothing; any other patch type is
415; without credentials 401, and every refusal is a `Status` object. Tests make it refuse
chosen paths with 403 or 422, as RBAC or a webhook would.

TLS is real: a private CA (tests/certificates.py) signs the server's certificate and a client certificate,
and the server asks for a client certificate and checks it against that CA.
"""

from __future__ import annotations

import base64
import copy
import json
import ssl
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests import certificates

TOKEN = "kube-token-of-the-docket-serviceaccount"
CLIENT_CN = "docket-kueue-sync"


@dataclass(frozen=True)
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path

    def b64(self, path: Path) -> str:
        return base64.b64encode(path.read_bytes()).decode()


def make_pki(directory: Path) -> Pki:
    """A CA, a server certificate for 127.0.0.1 and a client certificate (CN docket-kueue-sync), both CA-signed,
    valid at any instant the suite runs at (tests/certificates.py: the sync's child process keeps another clock)."""
    ca, _, signer = certificates.private_ca(directory, "test-kubernetes-ca")
    certificates.issue(directory / "server.crt", directory / "server.key", certificates.name("kube-apiserver"),
                       ip="127.0.0.1", issuer=signer)
    certificates.issue(directory / "client.crt", directory / "client.key", certificates.name(CLIENT_CN, "docket"),
                       client=True, issuer=signer)
    return Pki(ca, directory / "server.crt", directory / "server.key", directory / "client.crt",
               directory / "client.key")


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    content_type: str
    authorization: str
    client_cn: str | None
    body: Any


@dataclass
class KubeApiServer:
    url: str
    pki: Pki
    requests: list[Recorded] = field(default_factory=list)
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)  # path → stored object
    refusals: dict[str, tuple[int, dict[str, Any]]] = field(default_factory=dict)  # path → (code, Status)
    version: int = 100

    def reset(self) -> None:
        """Forget every request, object and refusal: the server as it started, for the next test (the certificates
        and the port stay, so one server serves a whole session)."""
        self.requests.clear()
        self.objects.clear()
        self.refusals.clear()
        self.version = 100

    def applies(self) -> list[Recorded]:
        return [r for r in self.requests if r.method == "PATCH"]

    def stored(self, kind_plural: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        scope = f"namespaces/{namespace}/" if namespace else ""
        return self.objects[f"/apis/kueue.x-k8s.io/v1beta2/{scope}{kind_plural}/{name}"]

    def refuse(
        self, path: str, code: int, reason: str, message: str, causes: list[dict[str, str]] | None = None
    ) -> None:
        self.refusals[path] = (code, status_body(code, reason, message, causes))


def status_body(code: int, reason: str, message: str, causes: list[dict[str, str]] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                            "message": message, "reason": reason, "code": code}
    if causes:
        body["details"] = {"causes": causes}
    return body


def _matches(labels: dict[str, str], selector: str) -> bool:
    for term in filter(None, selector.split(",")):
        key, _, value = term.partition("=")
        if labels.get(key) != value:
            return False
    return True


def _handler(api: KubeApiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _answer(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _record(self) -> Recorded | None:
            parts = urllib.parse.urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            peer = self.connection.getpeercert() if isinstance(self.connection, ssl.SSLSocket) else None
            subject: Any = (peer or {}).get("subject", ())  # ((("commonName", "x"),), (("organizationName", ...),))
            cn = next((value for rdn in subject for key, value in rdn if key == "commonName"), None)
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode(errors="replace")
            recorded = Recorded(
                method=self.command, path=parts.path, query=dict(urllib.parse.parse_qsl(parts.query)),
                content_type=self.headers.get("Content-Type", ""),
                authorization=self.headers.get("Authorization", ""), client_cn=cn, body=body,
            )
            api.requests.append(recorded)
            if recorded.authorization != f"Bearer {TOKEN}" and cn != CLIENT_CN:
                self._answer(401, status_body(401, "Unauthorized", "Unauthorized"))
                return None
            if recorded.path in api.refusals:
                self._answer(*api.refusals[recorded.path])
                return None
            return recorded

        def do_PATCH(self) -> None:
            request = self._record()
            if request is None:
                return
            if request.content_type != "application/apply-patch+yaml":
                message = ("the body of the request was in an unknown format - accepted media types include: "
                           f"application/apply-patch+yaml; got {request.content_type}")
                self._answer(415, status_body(415, "UnsupportedMediaType", message))
                return
            if not request.query.get("fieldManager"):
                self._answer(400, status_body(400, "BadRequest", "PatchOptions.meta.k8s.io \"\" is invalid: "
                                              "fieldManager: Required value: is required for apply patch"))
                return
            existing = api.objects.get(request.path)
            obj = copy.deepcopy(request.body)
            metadata = obj.setdefault("metadata", {})
            if existing is not None:
                same = {k: v for k, v in obj.items() if k != "metadata"} == {
                    k: v for k, v in existing.items() if k != "metadata"
                } and all(metadata.get(k) == existing["metadata"].get(k) for k in ("labels", "annotations"))
                metadata["uid"] = existing["metadata"]["uid"]
                metadata["creationTimestamp"] = existing["metadata"]["creationTimestamp"]
                if same:
                    metadata["resourceVersion"] = existing["metadata"]["resourceVersion"]
                else:
                    api.version += 1
                    metadata["resourceVersion"] = str(api.version)
            else:
                api.version += 1
                metadata.update(uid=f"uid-{api.version}", resourceVersion=str(api.version),
                                creationTimestamp="2026-12-02T10:00:00Z")
            if request.query.get("dryRun") != "All":
                api.objects[request.path] = obj
            self._answer(200 if existing is not None else 201, obj)

        def do_GET(self) -> None:
            request = self._record()
            if request is None:
                return
            prefix = request.path.rstrip("/") + "/"
            selector = request.query.get("labelSelector", "")
            items = [obj for path, obj in sorted(api.objects.items())
                     if (path.startswith(prefix) or _same_plural(path, request.path))
                     and _matches(obj["metadata"].get("labels", {}), selector)]
            self._answer(200, {"kind": "List", "apiVersion": "v1", "metadata": {"resourceVersion": str(api.version)},
                               "items": items})

        def do_DELETE(self) -> None:
            request = self._record()
            if request is None:
                return
            if api.objects.pop(request.path, None) is None:
                self._answer(404, status_body(404, "NotFound", f"{request.path} not found"))
                return
            self._answer(200, {"kind": "Status", "apiVersion": "v1", "status": "Success"})

    return Handler


def _same_plural(path: str, list_path: str) -> bool:
    """A cluster-wide list of a namespaced kind (/apis/g/v/localqueues) holds every namespace's objects."""
    group_version, _, plural = list_path.rstrip("/").rpartition("/")
    return path.startswith(group_version + "/namespaces/") and f"/{plural}/" in path


def serve(directory: Path) -> Iterator[KubeApiServer]:
    """Start the server on a free port of 127.0.0.1 in a thread; stop it when the generator is closed."""
    pki = make_pki(directory)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pki.server_cert, pki.server_key)
    context.load_verify_locations(cafile=str(pki.ca))
    context.verify_mode = ssl.CERT_OPTIONAL  # a bearer token or a client certificate, as kube-apiserver takes
    api = KubeApiServer(url="", pki=pki)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(api))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    api.url = f"https://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)

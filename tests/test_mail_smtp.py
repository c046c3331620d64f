"""Mail that arrives: the SMTP settings come from the environment and the digest reaches a real SMTP server.

The server is aiosmtpd, started once a session (each test finds its mailbox empty) on a free port of 127.0.0.1 with
STARTTLS (a self-signed certificate from tests/certificates.py, valid whichever clock checks it) and sign-in required,
so what passes here is what a company's relay asks for.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from committee import services
from committee.models import Notification, NotificationDigest, NotificationKind
from tests import certificates
from tests.clock import FIXED_NOW
from tests.test_deploy_checks import manage

USER, PASSWORD = "docket-relay", "s3cret-relay-pass"


@dataclass
class Received:
    """What the SMTP server accepted: the envelope and the parsed message, and who signed in."""

    mail_from: str
    rcpt_tos: list[str]
    message: Message
    login: str


@dataclass
class SmtpServer:
    host: str
    port: int
    ca_file: Path
    received: list[Received] = field(default_factory=list)


class _Handler:
    def __init__(self, server: SmtpServer) -> None:
        self.server = server

    async def handle_DATA(self, smtp_server: Any, session: Any, envelope: Any) -> str:  # aiosmtpd: handle_<VERB>
        login = session.auth_data.decode() if isinstance(session.auth_data, bytes) else str(session.auth_data)
        self.server.received.append(
            Received(envelope.mail_from, list(envelope.rcpt_tos), message_from_bytes(envelope.content), login)
        )
        return "250 Message accepted for delivery"


def _authenticate(server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any) -> AuthResult:
    ok = isinstance(auth_data, LoginPassword) and (auth_data.login, auth_data.password) == (
        USER.encode(),
        PASSWORD.encode(),
    )
    return AuthResult(success=ok, handled=False, auth_data=auth_data.login if ok else None)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="session")
def running_smtp_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SmtpServer]:
    """One SMTP server (and its certificate) per session; `smtp_server` empties its mailbox for each test."""
    import ssl

    cert, key = certificates.self_signed_server(tmp_path_factory.mktemp("smtp"))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    server = SmtpServer(host="127.0.0.1", port=_free_port(), ca_file=cert)
    controller = Controller(
        _Handler(server),
        hostname=server.host,
        port=server.port,
        tls_context=context,
        require_starttls=True,
        auth_required=True,
        authenticator=_authenticate,
    )
    controller.start()
    try:
        yield server
    finally:
        controller.stop()


@pytest.fixture
def smtp_server(running_smtp_server: SmtpServer) -> SmtpServer:
    """The session's SMTP server with nothing received yet."""
    running_smtp_server.received.clear()
    return running_smtp_server


def _smtp_env(server: SmtpServer, **overrides: str) -> dict[str, str]:
    env = {
        "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "EMAIL_HOST": server.host,
        "EMAIL_PORT": str(server.port),
        "EMAIL_USE_TLS": "1",
        "EMAIL_HOST_USER": USER,
        "EMAIL_HOST_PASSWORD": PASSWORD,
        "DEFAULT_FROM_EMAIL": "docket@example.com",
        "SSL_CERT_FILE": str(server.ca_file),
    }
    env.update(overrides)
    return env


def test_a_mail_sent_with_the_environments_settings_arrives(smtp_server: SmtpServer) -> None:
    result = manage("sendtestemail", "ops@example.com", **_smtp_env(smtp_server))

    assert result.returncode == 0, result.stderr + result.stdout
    (received,) = smtp_server.received
    assert received.rcpt_tos == ["ops@example.com"]
    assert received.mail_from == "docket@example.com"
    assert received.login == USER  # it signed in, after STARTTLS (the server refuses AUTH before it)


def test_a_wrong_password_is_refused_by_the_server_and_nothing_arrives(smtp_server: SmtpServer) -> None:
    result = manage("sendtestemail", "ops@example.com", **_smtp_env(smtp_server, EMAIL_HOST_PASSWORD="wrong"))

    assert result.returncode != 0
    assert "SMTPAuthenticationError" in result.stderr
    assert smtp_server.received == []


def test_a_certificate_nobody_trusts_is_refused(smtp_server: SmtpServer) -> None:
    env = _smtp_env(smtp_server)
    del env["SSL_CERT_FILE"]

    result = manage("sendtestemail", "ops@example.com", **env)

    assert result.returncode != 0
    assert "CERTIFICATE_VERIFY_FAILED" in result.stderr
    assert smtp_server.received == []


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"EMAIL_USE_TLS": "1", "EMAIL_USE_SSL": "1"}, "EMAIL_USE_TLS (STARTTLS) and EMAIL_USE_SSL"),
        ({"EMAIL_HOST_USER": "someone"}, "EMAIL_HOST_USER and EMAIL_HOST_PASSWORD go together"),
        ({"EMAIL_PORT": "70000"}, "EMAIL_PORT must be at most 65535"),
        ({"EMAIL_TIMEOUT": "0"}, "EMAIL_TIMEOUT must be above 0"),
    ],
)
def test_contradictory_mail_settings_stop_the_start_naming_the_variable(env: dict[str, str], message: str) -> None:
    result = manage("check", **env)

    assert result.returncode != 0
    assert message in result.stderr


def _use_smtp(settings: Any, server: SmtpServer, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in _smtp_env(server).items():
        if name == "SSL_CERT_FILE":
            monkeypatch.setenv(name, value)  # read by OpenSSL when the backend builds its TLS context
        elif name in ("EMAIL_PORT",):
            setattr(settings, name, int(value))
        elif name == "EMAIL_USE_TLS":
            settings.EMAIL_USE_TLS = True
        else:
            setattr(settings, name, value)
    settings.EMAIL_TIMEOUT = 10


@pytest.mark.django_db
def test_the_digest_is_read_back_from_the_smtp_server(world, settings, monkeypatch, smtp_server: SmtpServer) -> None:
    _use_smtp(settings, smtp_server, monkeypatch)
    services.notifications_record(
        recipient_ids=[world.lead_a.pk],
        kind=NotificationKind.REQUEST_SUBMITTED,
        key="request:1",
        params={"team": "Team A", "title": "Ranker retrain", "week": "2026-W50", "by": "Lead A"},
    )

    assert services.digests_send(now=FIXED_NOW) == 1

    (received,) = smtp_server.received
    assert received.rcpt_tos == [world.lead_a.email]
    assert str(received.message["Subject"]).startswith("Docket: 1 update for")
    payload = received.message.get_payload(decode=True)
    assert isinstance(payload, bytes)
    body = payload.decode()
    assert "“Ranker retrain” was submitted for week 2026-W50 by Lead A." in body
    assert NotificationDigest.objects.get(recipient=world.lead_a).email == world.lead_a.email


@pytest.mark.django_db
def test_a_mail_server_that_never_answers_holds_the_digest_only_for_the_timeout(world, settings) -> None:
    """It accepts the connection and says nothing: the digest gives up, records nothing, and waits for the next run."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen()
    accepted: list[socket.socket] = []
    acceptor = threading.Thread(target=lambda: accepted.append(silent.accept()[0]), daemon=True)
    acceptor.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", silent.getsockname()[1]
    settings.EMAIL_TIMEOUT = 0.5
    services.notifications_record(
        recipient_ids=[world.lead_a.pk], kind=NotificationKind.REQUEST_SUBMITTED, key="request:1",
        params={"team": "Team A", "title": "Ranker retrain"},
    )
    try:
        assert services.digests_send(now=FIXED_NOW) == 0
    finally:
        for connection in accepted:
            connection.close()
        silent.close()

    assert not NotificationDigest.objects.exists()
    assert Notification.objects.get().digest is None  # still waiting: the next run sends it

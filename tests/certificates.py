"""Certificates for the tests' TLS servers (SMTP, the stand-in Kubernetes API server), valid at any instant.

A certificate is checked on the clock of the process that checks it, and a test's process tree has more than one:
OpenSSL reads the C library's clock, which time-machine (tests/clock.py) leaves alone and `make test-at` shifts,
while a child started with a hand-built environment (`manage.py` under production settings, the Kueue sync command
line) runs without libfaketime, on the machine's real clock. A certificate made for "now + 2 days" on one of them is
not yet valid, or expired, on another. These are valid from 2000 to 2100: every instant the suite can run at, on
every clock, so which process made them and which checks them no longer matters.
"""

from __future__ import annotations

import ipaddress
from datetime import UTC, datetime
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

NOT_BEFORE = datetime(2000, 1, 1, tzinfo=UTC)
NOT_AFTER = datetime(2100, 1, 1, tzinfo=UTC)


def name(common_name: str, organization: str | None = None) -> x509.Name:
    """A subject: CN, and O when given (a Kubernetes client certificate's group)."""
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attributes)


def _write_key(path: Path) -> rsa.RSAPrivateKey:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    return key


def issue(path: Path, key_path: Path, subject: x509.Name, *, ca: bool = False, ip: str | None = None,
          client: bool = False, issuer: tuple[x509.Certificate, rsa.RSAPrivateKey] | None = None,
          ) -> tuple[x509.Certificate, rsa.RSAPrivateKey]:
    """Write a new key and a certificate for `subject` (self-signed without `issuer`): a CA, a server certificate for
    `ip`, or a client certificate; return both for signing others."""
    key = _write_key(key_path)
    issuer_cert, issuer_key = issuer if issuer else (None, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer_cert.subject if issuer_cert else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOT_BEFORE)
        .not_valid_after(NOT_AFTER)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False)
    )
    if ip:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(ip))]),
                                        critical=False)
    if client:
        builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
    certificate = builder.sign(issuer_key, hashes.SHA256())
    path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    return certificate, key


def self_signed_server(directory: Path, *, ip: str = "127.0.0.1") -> tuple[Path, Path]:
    """A self-signed certificate for `ip` that is also the CA a client trusts: its certificate and key files."""
    cert, key = directory / "server.pem", directory / "server.key"
    issue(cert, key, name(ip), ca=True, ip=ip)
    return cert, key


def private_ca(directory: Path, common_name: str) -> tuple[Path, Path, tuple[x509.Certificate, rsa.RSAPrivateKey]]:
    """A CA: its certificate and key files, and the pair to sign with (`issue(..., issuer=...)`)."""
    cert, key = directory / "ca.crt", directory / "ca.key"
    return cert, key, issue(cert, key, name(common_name), ca=True)

"""TLS of a process's servers (REST and gRPC) and the CA it trusts, from ``[common] tls_cert``,
``tls_key`` and ``tls_ca`` (PEM paths, read once at start).  ``vecgrid certs`` makes a test CA and a
certificate for given hosts (:func:`make_test_certificates`)."""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import grpc

from vecgrid.config import ConfigError

if TYPE_CHECKING:
    from vecgrid.config import Settings


def _read(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise ConfigError(f"common.{what} {path!r} cannot be read: {e.strerror}") from None


@dataclass(frozen=True)
class ServerTls:
    """A server's certificate and key (PEM), and their paths (for :mod:`ssl`)."""

    cert_path: str
    key_path: str
    cert: bytes
    key: bytes

    def grpc_credentials(self) -> grpc.ServerCredentials:
        return grpc.ssl_server_credentials([(self.key, self.cert)])

    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert_path, self.key_path)
        return context


def server_tls(settings: "Settings") -> ServerTls | None:
    """The process's server certificate, or ``None`` for plain text; a ``ConfigError`` when only one of
    the two is set or a file cannot be read."""
    cert, key = settings.common.tls_cert, settings.common.tls_key
    if not cert and not key:
        return None
    if not cert or not key:
        raise ConfigError("common.tls_cert and common.tls_key go together: set both, or neither")
    if not settings.common.tls_ca:
        raise ConfigError("common.tls_ca is needed with common.tls_cert: the cluster's processes call each other "
                          "over TLS too")
    return ServerTls(cert, key, _read(cert, "tls_cert"), _read(key, "tls_key"))


def trusted_ca(settings: "Settings") -> bytes | None:
    """The CA this process trusts when it calls (``None``: it calls in plain text)."""
    return _read(settings.common.tls_ca, "tls_ca") if settings.common.tls_ca else None


def make_test_certificates(directory: str | os.PathLike[str], hosts: Iterable[str], days: int = 365) -> dict[str, str]:
    """A self-signed CA (``ca.pem``) and a server certificate (``cert.pem``, key ``key.pem``, mode 0600)
    for ``hosts`` (names and IP addresses) in ``directory``; returns the three paths.  For test
    clusters: production certificates come from the operator's own CA."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "vecgrid test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=days))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    if not names:
        raise ValueError("give at least one host name or address for the certificate")
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, str(next(iter(hosts))))]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH,
                                                  x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = {"ca": str(out / "ca.pem"), "cert": str(out / "cert.pem"), "key": str(out / "key.pem")}
    Path(paths["ca"]).write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    Path(paths["cert"]).write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    fd = os.open(paths["key"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return paths


def dask_security(settings: "Settings") -> Any:
    """Dask's TLS (``distributed.security.Security``, mutual: every scheduler, worker and client shows a
    certificate of the CA) from the same settings, or ``None`` for plain TCP.  The certificate of
    ``vecgrid certs`` serves every role (server and client)."""
    tls = server_tls(settings)
    if tls is None:
        return None
    from distributed.security import Security

    return Security(tls_ca_file=settings.common.tls_ca, tls_client_cert=tls.cert_path, tls_client_key=tls.key_path,
                    tls_scheduler_cert=tls.cert_path, tls_scheduler_key=tls.key_path,
                    tls_worker_cert=tls.cert_path, tls_worker_key=tls.key_path, require_encryption=True)

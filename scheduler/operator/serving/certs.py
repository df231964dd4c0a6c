"""The serving certificate and the TLS context, as kube-scheduler's secure serving builds them.

Without ``--tls-cert-file``/``--tls-private-key-file`` a self-signed certificate is made in
memory at start (upstream writes one under ``--cert-dir``, whose default is in memory too:
``SecureServingOptions.MaybeDefaultWithSelfSignedCerts``). TLS 1.2 is the floor, as Go's
server default. A client certificate is asked for, not required, when a client CA is known:
one signed by that CA authenticates its subject (CN the user, O the groups).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
import ssl
import tempfile
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

# A year, as client-go's GenerateSelfSignedCertKey (which also makes a CA; one leaf is enough
# for a certificate nobody verifies).
SELF_SIGNED_DAYS = 365


def self_signed(host: str, alternate: list[str]) -> tuple[bytes, bytes]:
    """A PEM certificate and key for ``host``, valid for the names and IPs given too."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME,
                                         f"{host}@{int(datetime.datetime.now().timestamp())}")])
    sans: list[x509.GeneralName] = []
    for entry in [host, *alternate]:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(entry)))
        except ValueError:
            sans.append(x509.DNSName(entry))
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=SELF_SIGNED_DAYS))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]),
                       critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(serialization.Encoding.PEM,
                                serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def server_context(cert_file: str | None, key_file: str | None,
                   client_ca: str | None) -> ssl.SSLContext:
    """TLS 1.2+, the given or a self-signed certificate, client certificates checked against
    ``client_ca`` (PEM text) when there is one."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert_file and key_file:
        context.load_cert_chain(cert_file, key_file)
    else:
        _load_in_memory(context, *self_signed(
            "localhost", [socket.gethostname(), "127.0.0.1", "::1"]))
    if client_ca:
        context.load_verify_locations(cadata=client_ca)
        context.verify_mode = ssl.CERT_OPTIONAL
    return context


def _load_in_memory(context: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """ssl reads a chain only from files: a private temporary one, removed at once (the
    root filesystem may be read-only; the temporary directory is not)."""
    fd, path = tempfile.mkstemp(prefix="serving-", suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(key + cert)
        context.load_cert_chain(path)
    finally:
        Path(path).unlink(missing_ok=True)

"""Test helper: certificates as ``amulet dev`` makes them, generated with the
``cryptography`` package: an EC P-256 CA, node certificates with the DNS
names ``amulet-node`` and ``node-<id>.amulet`` and the IP 127.0.0.1, user
certificates with CN=<user> and the URI ``urn:amulet:user:<user>``; keys
as PKCS#8 PEM. Nothing is fetched and nothing is kept beyond the test's
temporary directory."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _pkcs8(key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


class Ca:
    """A self-signed EC P-256 CA that signs node and user certificates."""

    def __init__(self, name: str = "amulet test CA"):
        self.key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.timezone.utc)
        self.name = subject
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False)
            .sign(self.key, hashes.SHA256())
        )

    @property
    def pem(self) -> bytes:
        return _pem(self.cert)

    def issue(self, common_name: str, names: list[x509.GeneralName], usage) -> tuple[bytes, bytes]:
        """A leaf certificate and its key, as (certificate PEM, PKCS#8 key PEM)."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
            .issuer_name(self.name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False
            )
            .sign(self.key, hashes.SHA256())
        )
        return _pem(cert), _pkcs8(key)

    def node(self, node_id: int = 1, dns: tuple[str, ...] | None = None) -> tuple[bytes, bytes]:
        """A node's certificate: DNS amulet-node and node-<id>.amulet (or
        ``dns``), IP 127.0.0.1."""
        if dns is None:
            dns = ("amulet-node", f"node-{node_id}.amulet")
        names = [x509.DNSName(d) for d in dns] + [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
        return self.issue(f"node-{node_id}", names, ExtendedKeyUsageOID.SERVER_AUTH)

    def user(self, user: str = "admin") -> tuple[bytes, bytes]:
        """A user's certificate: CN=<user>, URI urn:amulet:user:<user>."""
        names = [x509.UniformResourceIdentifier(f"urn:amulet:user:{user}")]
        return self.issue(user, names, ExtendedKeyUsageOID.CLIENT_AUTH)

    def write_user_dir(self, directory: Path, user: str = "admin") -> Path:
        """A TLS directory as ``amulet dev`` lays it out for a client:
        ``ca.pem``, ``<user>.pem``, ``<user>.key``."""
        directory.mkdir(parents=True, exist_ok=True)
        cert, key = self.user(user)
        (directory / "ca.pem").write_bytes(self.pem)
        (directory / f"{user}.pem").write_bytes(cert)
        (directory / f"{user}.key").write_bytes(key)
        return directory

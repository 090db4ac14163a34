"""A throw-away certificate authority for TLS tests, made with the openssl command line.

The same commands docs/security.md shows: an EC P-256 CA, and leaf certificates it signs for
127.0.0.1 / localhost (usable as server or client certificates).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Leaf:
    cert: str
    key: str


@dataclass(frozen=True)
class CertAuthority:
    """`ca` is the CA certificate (PEM); `issue(name)` makes a leaf it signed."""

    directory: Path
    ca: str
    ca_key: str

    def issue(self, name: str) -> Leaf:
        d = self.directory
        key, csr, cert, ext = d / f"{name}.key", d / f"{name}.csr", d / f"{name}.pem", d / f"{name}.ext"
        ext.write_text(
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n",
            encoding="ascii",
        )
        _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key)
        _openssl("req", "-new", "-key", key, "-subj", f"/CN={name}", "-out", csr)
        _openssl(
            "x509", "-req", "-in", csr, "-CA", self.ca, "-CAkey", self.ca_key, "-CAcreateserial",
            "-days", "2", "-sha256", "-extfile", ext, "-out", cert,
        )  # fmt: skip
        return Leaf(str(cert), str(key))


def _openssl(*args: object) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True, timeout=30)


def make_test_ca(directory: Path, name: str = "rocketq-test-ca") -> CertAuthority:
    directory.mkdir(parents=True, exist_ok=True)
    key, cert = directory / f"{name}.key", directory / f"{name}.pem"
    _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key)
    _openssl(
        "req", "-x509", "-new", "-key", key, "-subj", f"/CN={name}", "-days", "2", "-sha256", "-out", cert
    )
    return CertAuthority(directory, str(cert), str(key))

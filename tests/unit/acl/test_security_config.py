"""The security keys of the daemons: Java's dotted names, and clear errors for unusable settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketq.common.errors import ConfigError
from rocketq.namesrv.config import NamesrvConfig
from rocketq.remoting.security_config import DaemonSecurity


def test_java_dotted_names_are_accepted() -> None:
    cfg = NamesrvConfig.build(
        {"tls.server.mode": "permissive", "tls.server.certPath": "/c.pem", "tls.server.keyPath": "/k.pem",
         "tls.server.trustCertPath": "/ca.pem", "tls.server.need.client.auth": "true", "tls.enable": "true",
         "tls.client.trustCertPath": "/ca.pem", "aclEnable": "true", "aclFilePath": "/acl.yml"}
    )  # fmt: skip
    assert (cfg.tls_mode, cfg.tls_server_cert_path, cfg.tls_server_need_client_auth) == (
        "permissive",
        "/c.pem",
        True,
    )
    assert cfg.tls_enable and cfg.tls_client_trust_cert_path == "/ca.pem"
    assert cfg.acl_enable and cfg.acl_file_path == "/acl.yml"


def test_bad_tls_mode_names_the_key() -> None:
    with pytest.raises(ConfigError, match="tlsMode"):
        NamesrvConfig.build({"tlsMode": "sometimes"})


def test_tls_without_certificate_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="tlsServerCertPath and tlsServerKeyPath"):
        NamesrvConfig.build({"tlsMode": "enforcing"}).server_tls()


def test_unreadable_certificate_is_a_config_error(tmp_path: Path) -> None:
    cfg = NamesrvConfig.build(
        {
            "tlsMode": "enforcing",
            "tlsServerCertPath": str(tmp_path / "none.pem"),
            "tlsServerKeyPath": str(tmp_path / "none.key"),
        }
    )
    with pytest.raises(ConfigError, match="not usable"):
        cfg.server_tls()


def test_credentials_go_together() -> None:
    with pytest.raises(ConfigError, match="accessKey and secretKey"):
        DaemonSecurity(NamesrvConfig.build({"accessKey": "onlyTheKey"}))
    security = DaemonSecurity(NamesrvConfig.build({}))
    assert security.server_tls is None and security.acl_hook is None and security.client_hook is None


def test_secret_not_in_repr() -> None:
    assert "topSecret99" not in repr(
        NamesrvConfig.build({"accessKey": "someKey01", "secretKey": "topSecret99"})
    )

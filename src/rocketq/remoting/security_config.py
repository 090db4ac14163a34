"""The security settings a NameServer and a broker share (ACL, TLS), and the objects built from them.

Key names: RocketMQ 4.9's (`aclEnable`, `tlsMode`, and TlsSystemConfig's `tls.server.*` /
`tls.client.*` / `tls.enable` system properties, accepted with their dots in a .properties file),
with camelCase spellings for the TLS ones (`tlsServerCertPath` ...). `accessKey` / `secretKey` are
the credentials a daemon signs its own requests with (a broker registering with NameServers, a slave
asking its master), which Java 4.9 does not have (it relies on whitelists for that).
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable
from typing import ClassVar, Literal

from pydantic import Field

from rocketq.common.config import RocketConfig
from rocketq.common.errors import ConfigError
from rocketq.common.service import PeriodicService
from rocketq.common.tls import ServerTls, TlsMode, client_context, server_context
from rocketq.remoting.acl.plain_config import PlainAclConfig
from rocketq.remoting.acl.server_hook import AclServerHook
from rocketq.remoting.transport.acl_hook import AclClientRPCHook
from rocketq.remoting.transport.client import RemotingClient
from rocketq.remoting.transport.server import RemotingServer

log = logging.getLogger("rocketq.acl")

TlsModeName = Literal["disabled", "permissive", "enforcing"]


class SecurityConfig(RocketConfig):
    """ACL and TLS keys of a daemon (a mixin of NamesrvConfig and BrokerConfig)."""

    JAVA_PROPERTY_NAMES: ClassVar[dict[str, str]] = {
        "tls.server.mode": "tls_mode",
        "tls.server.certPath": "tls_server_cert_path",
        "tls.server.keyPath": "tls_server_key_path",
        "tls.server.trustCertPath": "tls_server_trust_cert_path",
        "tls.server.need.client.auth": "tls_server_need_client_auth",
        "tls.enable": "tls_enable",
        "tls.client.certPath": "tls_client_cert_path",
        "tls.client.keyPath": "tls_client_key_path",
        "tls.client.trustCertPath": "tls_client_trust_cert_path",
    }

    acl_enable: bool = Field(False, alias="aclEnable", description="verify requests against the ACL files")
    acl_file_path: str = Field(
        "conf/plain_acl.yml", alias="aclFilePath", description="plain_acl.yml, or a folder of ACL YAML files"
    )
    acl_file_watch_interval_ms: int = Field(
        5000,
        alias="aclFileWatchInterval",
        ge=100,
        description="how often the ACL files are checked for changes",
    )
    tls_mode: TlsModeName = Field("disabled", alias="tlsMode")
    """disabled: plain frames only; permissive: TLS or plain on the same port (by the first byte); enforcing: TLS only."""
    tls_server_cert_path: str | None = Field(None, alias="tlsServerCertPath")
    """The listening ports' certificate chain (PEM)."""
    tls_server_key_path: str | None = Field(None, alias="tlsServerKeyPath")
    """The private key of that certificate (PEM)."""
    tls_server_trust_cert_path: str | None = Field(None, alias="tlsServerTrustCertPath")
    """CA certificates (PEM) that clients' certificates must chain to."""
    tls_server_need_client_auth: bool = Field(False, alias="tlsServerNeedClientAuth")
    """Refuse TLS clients without a certificate signed by tlsServerTrustCertPath."""
    tls_handshake_timeout_ms: int = Field(10_000, alias="tlsHandshakeTimeout", ge=100)
    """How long a new connection may take to send its first byte and finish the TLS handshake (ms)."""
    tls_enable: bool = Field(False, alias="tlsEnable", description="this daemon's own connections use TLS")
    tls_client_cert_path: str | None = Field(None, alias="tlsClientCertPath")
    """This daemon's certificate (PEM) for servers that ask for one (tlsEnable)."""
    tls_client_key_path: str | None = Field(None, alias="tlsClientKeyPath")
    """The private key of tlsClientCertPath (PEM)."""
    tls_client_trust_cert_path: str | None = Field(None, alias="tlsClientTrustCertPath")
    """CA certificates (PEM) the servers this daemon connects to must chain to."""
    access_key: str | None = Field(
        None, alias="accessKey", description="credentials of this daemon's requests"
    )
    secret_key: str | None = Field(None, alias="secretKey", repr=False)
    """The secret key of accessKey (never logged)."""

    def server_tls(self) -> ServerTls | None:
        """The listening ports' TLS, None when disabled; ConfigError naming the unusable file."""
        mode = TlsMode(self.tls_mode)
        if mode is TlsMode.DISABLED:
            return None
        if not self.tls_server_cert_path or not self.tls_server_key_path:
            raise ConfigError(f"tlsMode={self.tls_mode} needs tlsServerCertPath and tlsServerKeyPath")
        try:
            ctx = server_context(
                self.tls_server_cert_path,
                self.tls_server_key_path,
                self.tls_server_trust_cert_path,
                self.tls_server_need_client_auth,
            )
        except (OSError, ssl.SSLError, ValueError) as exc:
            raise ConfigError(f"TLS server certificate/key/CA not usable: {exc}") from None
        return ServerTls(mode, ctx, self.tls_handshake_timeout_ms / 1000)

    def client_ssl_context(self) -> ssl.SSLContext | None:
        """The context of this daemon's outgoing connections, None unless tlsEnable."""
        if not self.tls_enable:
            return None
        try:
            return client_context(
                self.tls_client_trust_cert_path, self.tls_client_cert_path, self.tls_client_key_path
            )
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"TLS client certificate/key/CA not usable: {exc}") from None

    def client_rpc_hook(self) -> AclClientRPCHook | None:
        """The signing hook of this daemon's outgoing requests, None without credentials."""
        if not self.access_key and not self.secret_key:
            return None
        if not self.access_key or not self.secret_key:
            raise ConfigError("accessKey and secretKey go together: set both or neither")
        return AclClientRPCHook(self.access_key, self.secret_key)


class DaemonSecurity:
    """What a daemon builds from its SecurityConfig: the server's TLS and ACL hook, its client's TLS
    and signing hook, and the periodic check of the ACL files. `checked` picks the request codes ACL
    verifies (None: every code, as on a broker; the write codes on a NameServer)."""

    def __init__(self, config: SecurityConfig, checked: Callable[[int], bool] | None = None) -> None:
        self.server_tls = config.server_tls()
        self.client_ssl = config.client_ssl_context()
        self.client_hook = config.client_rpc_hook()
        self.acl: PlainAclConfig | None = None
        self.acl_hook: AclServerHook | None = None
        self.watch: PeriodicService | None = None
        if config.acl_enable:
            self.acl = PlainAclConfig(config.acl_file_path)
            if not self.acl.tables.files:
                log.warning(
                    "aclEnable=true but no ACL file at %s: every checked request is refused",
                    config.acl_file_path,
                )
            self.acl_hook = AclServerHook(self.acl, checked)
            self.watch = PeriodicService(
                "acl-file-watch",
                config.acl_file_watch_interval_ms / 1000,
                self._reload,
                config.acl_file_watch_interval_ms / 1000,
            )

    async def _reload(self) -> None:
        if self.acl is not None:
            self.acl.reload_if_changed()

    def install_server(self, server: RemotingServer) -> None:
        if self.acl_hook is not None:
            server.register_request_hook(self.acl_hook)

    def install_client(self, client: RemotingClient) -> None:
        client.ssl_context = self.client_ssl
        if self.client_hook is not None:
            client.register_rpc_hook(self.client_hook)

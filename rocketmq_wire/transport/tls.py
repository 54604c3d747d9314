"""TLS set up the way Apache's remoting layer sets it up: the same setting names, the same server modes.

Apache reads its ``tls.*`` settings from JVM system properties, then lets a properties file
(``tls.config.file``, default ``/etc/rocketmq/tls.properties``) override the certificate ones. A server runs
in one of three modes, told apart per connection by its first byte (0x16 opens a TLS handshake):

* ``disabled``: a TLS handshake closes the connection;
* ``permissive`` (Apache's default): TLS and plain connections share the port;
* ``enforcing``: a plain connection is closed.

Test mode (``tls.test.mode.enable``, on by default in Apache) serves a self-signed certificate and makes
clients trust any server; without it the server needs ``tls.server.certPath`` and ``tls.server.keyPath``
(PEM), and a client checks the server's certificate only with ``tls.client.authServer``.

What Python's ``ssl`` cannot do as Netty does: a server that asks for client certificates without
``tls.server.authClient`` (Apache then accepts any certificate) does not ask for one here.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import logging
import ssl
import tempfile
from collections.abc import Mapping
from pathlib import Path

logger = logging.getLogger("rocketmq_wire.transport.tls")

#: The first byte of every TLS handshake record (Apache's ``HANDSHAKE_MAGIC_CODE``).
TLS_HANDSHAKE_BYTE = 0x16
#: Where Apache looks for the TLS properties file when ``tls.config.file`` is not given.
DEFAULT_CONFIG_FILE = "/etc/rocketmq/tls.properties"

# Apache's setting names (``TlsSystemConfig``).
SERVER_MODE = "tls.server.mode"
ENABLE = "tls.enable"
CONFIG_FILE = "tls.config.file"
TEST_MODE = "tls.test.mode.enable"
SERVER_NEED_CLIENT_AUTH = "tls.server.need.client.auth"
SERVER_KEY_PATH = "tls.server.keyPath"
SERVER_KEY_PASSWORD = "tls.server.keyPassword"
SERVER_CERT_PATH = "tls.server.certPath"
SERVER_AUTH_CLIENT = "tls.server.authClient"
SERVER_TRUST_CERT_PATH = "tls.server.trustCertPath"
CLIENT_KEY_PATH = "tls.client.keyPath"
CLIENT_KEY_PASSWORD = "tls.client.keyPassword"
CLIENT_CERT_PATH = "tls.client.certPath"
CLIENT_AUTH_SERVER = "tls.client.authServer"
CLIENT_TRUST_CERT_PATH = "tls.client.trustCertPath"

#: The settings Apache takes from the properties file (the mode and ``tls.enable`` only from properties).
FILE_SETTINGS = (
    TEST_MODE,
    SERVER_NEED_CLIENT_AUTH,
    SERVER_KEY_PATH,
    SERVER_KEY_PASSWORD,
    SERVER_CERT_PATH,
    SERVER_AUTH_CLIENT,
    SERVER_TRUST_CERT_PATH,
    CLIENT_KEY_PATH,
    CLIENT_KEY_PASSWORD,
    CLIENT_CERT_PATH,
    CLIENT_AUTH_SERVER,
    CLIENT_TRUST_CERT_PATH,
)
ALL_SETTINGS = (SERVER_MODE, ENABLE, CONFIG_FILE, *FILE_SETTINGS)


class TlsError(ValueError):
    """TLS cannot be set up as configured; the message names the setting to change."""


class TlsMode(enum.Enum):
    """How a server treats TLS and plain connections (Apache's ``TlsMode``)."""

    DISABLED = "disabled"
    PERMISSIVE = "permissive"
    ENFORCING = "enforcing"

    @classmethod
    def parse(cls, text: str) -> TlsMode:
        try:
            return cls(text.strip().lower())
        except ValueError:
            choices = ", ".join(m.value for m in cls)
            raise TlsError(f"{SERVER_MODE}={text!r}: choose {choices}") from None


class ClientAuth(enum.Enum):
    """``tls.server.need.client.auth``."""

    NONE = "none"
    OPTIONAL = "optional"
    REQUIRE = "require"


def _flag(value: str) -> bool:
    # Java's Boolean.parseBoolean: "true" in any case is true, anything else false.
    return value.strip().lower() == "true"


@dataclasses.dataclass(frozen=True, slots=True)
class TlsConfig:
    """Apache's TLS settings, with Apache's defaults."""

    server_mode: TlsMode = TlsMode.PERMISSIVE
    #: Clients: connect with TLS (``tls.enable``; Java clients' ``useTLS``); None when not set, which
    #: for a broker's own client means "as its server enforces" (Apache's BrokerStartup).
    enable: bool | None = None
    test_mode: bool = True
    server_need_client_auth: ClientAuth = ClientAuth.NONE
    server_key_path: str | None = None
    server_key_password: str | None = None
    server_cert_path: str | None = None
    server_auth_client: bool = False
    server_trust_cert_path: str | None = None
    client_key_path: str | None = None
    client_key_password: str | None = None
    client_cert_path: str | None = None
    client_auth_server: bool = False
    client_trust_cert_path: str | None = None

    @classmethod
    def from_settings(cls, settings: Mapping[str, str], *, read_file: bool = True) -> TlsConfig:
        """The configuration that ``settings`` (Apache's names, as JVM system properties would give them)
        describe, the properties file they name (or Apache's default one, if it exists) applied on top
        for the settings Apache reads from it. Unknown ``tls.*`` names are refused."""
        unknown = sorted(k for k in settings if k.startswith("tls.") and k not in ALL_SETTINGS)
        if unknown:
            raise TlsError(f"unknown TLS setting(s) {', '.join(unknown)}; known: {', '.join(ALL_SETTINGS)}")
        merged = dict(settings)
        if read_file:
            path = Path(settings.get(CONFIG_FILE) or DEFAULT_CONFIG_FILE)
            if path.is_file():
                from_file = read_properties(path)
                merged.update({k: v for k, v in from_file.items() if k in FILE_SETTINGS})
                logger.info("TLS settings read from %s", path)
            elif CONFIG_FILE in settings:
                raise TlsError(f"{CONFIG_FILE}={settings[CONFIG_FILE]!r}: no such file")
        return cls._from_merged(merged)

    @classmethod
    def _from_merged(cls, s: Mapping[str, str]) -> TlsConfig:
        base = cls()

        def text(name: str, default: str | None) -> str | None:
            value = s.get(name)
            return value if value else default

        need = s.get(SERVER_NEED_CLIENT_AUTH, base.server_need_client_auth.value).strip().lower()
        try:
            client_auth = ClientAuth(need)
        except ValueError:
            raise TlsError(f"{SERVER_NEED_CLIENT_AUTH}={need!r}: choose none, optional, require") from None
        return cls(
            server_mode=TlsMode.parse(s[SERVER_MODE]) if SERVER_MODE in s else base.server_mode,
            enable=_flag(s[ENABLE]) if ENABLE in s else None,
            test_mode=_flag(s[TEST_MODE]) if TEST_MODE in s else base.test_mode,
            server_need_client_auth=client_auth,
            server_key_path=text(SERVER_KEY_PATH, None),
            server_key_password=text(SERVER_KEY_PASSWORD, None),
            server_cert_path=text(SERVER_CERT_PATH, None),
            server_auth_client=_flag(s[SERVER_AUTH_CLIENT]) if SERVER_AUTH_CLIENT in s else False,
            server_trust_cert_path=text(SERVER_TRUST_CERT_PATH, None),
            client_key_path=text(CLIENT_KEY_PATH, None),
            client_key_password=text(CLIENT_KEY_PASSWORD, None),
            client_cert_path=text(CLIENT_CERT_PATH, None),
            client_auth_server=_flag(s[CLIENT_AUTH_SERVER]) if CLIENT_AUTH_SERVER in s else False,
            client_trust_cert_path=text(CLIENT_TRUST_CERT_PATH, None),
        )

    def server_context(self) -> ssl.SSLContext:
        """The context a server answers TLS handshakes with; :class:`TlsError` when it cannot be built."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        if self.test_mode:
            cert_pem, key_pem = self_signed_certificate()
            # ssl loads certificates from files only: written for the call, gone right after it.
            with tempfile.TemporaryDirectory(prefix="rmq-tls-test-") as folder:
                cert, key = Path(folder) / "cert.pem", Path(folder) / "key.pem"
                cert.write_bytes(cert_pem)
                key.touch(0o600)
                key.write_bytes(key_pem)
                _load_chain(context, str(cert), str(key), None, "test mode's self-signed certificate")
        else:
            if not self.server_cert_path or not self.server_key_path:
                raise TlsError(
                    f"a TLS server needs {SERVER_CERT_PATH} and {SERVER_KEY_PATH} "
                    f"(or {TEST_MODE}=true for a self-signed certificate)"
                )
            _load_chain(
                context, self.server_cert_path, self.server_key_path, self.server_key_password, "server"
            )
        if self.server_auth_client and self.server_need_client_auth is not ClientAuth.NONE:
            context.verify_mode = (
                ssl.CERT_REQUIRED if self.server_need_client_auth is ClientAuth.REQUIRE else ssl.CERT_OPTIONAL
            )
            _load_trust(context, self.server_trust_cert_path, SERVER_TRUST_CERT_PATH)
        return context

    def client_context(self) -> ssl.SSLContext:
        """The context clients connect with (whether they use TLS at all is :attr:`enable`)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        # Apache's clients never check the host name; they check the chain only with authServer.
        context.check_hostname = False
        if self.test_mode or not self.client_auth_server:
            context.verify_mode = ssl.CERT_NONE
        else:
            context.verify_mode = ssl.CERT_REQUIRED
            _load_trust(context, self.client_trust_cert_path, CLIENT_TRUST_CERT_PATH)
        if not self.test_mode and self.client_cert_path and self.client_key_path:
            _load_chain(
                context, self.client_cert_path, self.client_key_path, self.client_key_password, "client"
            )
        return context

    @property
    def server_client_uses_tls(self) -> bool:
        """Whether a server's own client (a broker's, to the NameServers) uses TLS: ``tls.enable``, or when
        unset, whether the server enforces TLS."""
        return self.enable if self.enable is not None else self.server_mode is TlsMode.ENFORCING

    def listener(self) -> tuple[TlsMode, ssl.SSLContext | None]:
        """The mode and context a server listens with. An enforcing server that cannot build its context
        fails (:class:`TlsError`); a permissive one logs why and closes TLS handshakes, as Apache's does
        when its ``SslContext`` cannot be made."""
        if self.server_mode is TlsMode.DISABLED:
            return self.server_mode, None
        try:
            return self.server_mode, self.server_context()
        except TlsError as exc:
            if self.server_mode is TlsMode.ENFORCING:
                raise
            logger.info("TLS connections will be closed: %s", exc)
            return self.server_mode, None


def client_context(config_file: str | None = None) -> ssl.SSLContext:
    """What a client with ``tls.enable=true`` connects with: Apache's client settings of ``config_file``
    (a ``tls.properties``), else of Apache's default file if it exists; :class:`TlsError` if unreadable."""
    settings = {ENABLE: "true"}
    if config_file:
        settings[CONFIG_FILE] = config_file
    return TlsConfig.from_settings(settings).client_context()


def read_properties(path: Path) -> dict[str, str]:
    """A Java properties file (``Properties.load`` syntax, as Apache reads ``tls.properties``)."""
    from rocketmq_wire.bodies.properties_text import PropertiesBody
    from rocketmq_wire.errors import CodecError

    try:
        return dict(PropertiesBody.from_text(path.read_bytes()).properties)
    except (OSError, CodecError) as exc:
        raise TlsError(f"cannot read the TLS properties file {path}: {exc}") from exc


def _load_chain(context: ssl.SSLContext, cert: str, key: str, password: str | None, what: str) -> None:
    try:
        context.load_cert_chain(cert, key, password)
    except (OSError, ssl.SSLError) as exc:
        raise TlsError(f"cannot load the {what} certificate {cert} with key {key}: {exc}") from exc


def _load_trust(context: ssl.SSLContext, path: str | None, setting: str) -> None:
    try:
        if path:
            context.load_verify_locations(path)
        else:
            context.load_default_certs()
    except (OSError, ssl.SSLError) as exc:
        raise TlsError(f"{setting}={path!r}: {exc}") from exc


_self_signed: tuple[bytes, bytes] | None = None


def self_signed_certificate() -> tuple[bytes, bytes]:
    """A self-signed certificate and its key (PEM) for test mode, made once per process (what Netty's
    ``SelfSignedCertificate`` gives Apache's servers). Needs the ``cryptography`` package."""
    global _self_signed
    if _self_signed is not None:
        return _self_signed
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID
    except ImportError:
        raise TlsError(
            f"{TEST_MODE}=true needs the 'cryptography' package for its self-signed certificate "
            f"(pip install 'rocketmq-toolkit[tls]'), or set {TEST_MODE}=false with "
            f"{SERVER_CERT_PATH} and {SERVER_KEY_PATH}"
        ) from None
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .sign(key, hashes.SHA256())
    )
    _self_signed = (
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
    )
    return _self_signed

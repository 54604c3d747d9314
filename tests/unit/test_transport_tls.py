"""TLS between RemotingClient and RemotingServer, with a throwaway self-signed certificate for 127.0.0.1."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
import tempfile
from pathlib import Path

import pytest

from rocketmq_wire.codes import ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.transport import (
    Connection,
    RemotingClient,
    RemotingConnectError,
    RemotingError,
    RemotingServer,
)
from rocketmq_wire.transport.tls import TlsConfig, TlsError, TlsMode

ECHO = 1001

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")


async def echo(request: RemotingCommand, conn: Connection) -> RemotingCommand:
    return request.make_response(ResponseCode.SUCCESS, body=request.body)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
            "-addext", "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


def contexts(certificate: tuple[Path, Path]) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    cert, key = certificate
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)
    client_ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(cert))
    return server_ctx, client_ctx


async def test_request_over_tls(certificate: tuple[Path, Path]) -> None:
    server_ctx, client_ctx = contexts(certificate)
    async with (
        RemotingServer("127.0.0.1", 0, {ECHO: echo}, ssl=server_ctx) as server,
        RemotingClient(ssl=client_ctx) as client,
    ):
        response = await client.invoke(server.address, RemotingCommand.request(ECHO, body=b"secret"), 5000)
        conn = client.connections[server.address]
        assert conn.get_extra_info("sslcontext") is client_ctx
    assert response.body == b"secret"


async def test_untrusted_certificate_is_a_connect_error(certificate: tuple[Path, Path]) -> None:
    server_ctx, _ = contexts(certificate)
    strict = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)  # system CAs only: our cert is unknown
    async with (
        RemotingServer("127.0.0.1", 0, {ECHO: echo}, ssl=server_ctx) as server,
        RemotingClient(ssl=strict) as client,
    ):
        with pytest.raises(RemotingConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await client.invoke(server.address, RemotingCommand.request(ECHO), 5000)
        assert server.connections == frozenset()


@pytest.mark.parametrize(
    ("mode", "plain_served", "tls_served"),
    [(TlsMode.DISABLED, True, False), (TlsMode.PERMISSIVE, True, True), (TlsMode.ENFORCING, False, True)],
)
async def test_each_server_mode_serves_what_apaches_does(
    certificate: tuple[Path, Path], mode: TlsMode, plain_served: bool, tls_served: bool
) -> None:
    """One port, both kinds of client: a connection the mode refuses is closed and nothing is answered on
    it, and the server goes on serving the other kind (each checked after the refusal too)."""
    server_ctx, _ = contexts(certificate)
    trusting = TlsConfig().client_context()  # test mode, as Apache's clients: any server certificate
    async with RemotingServer("127.0.0.1", 0, {ECHO: echo}, ssl=server_ctx, tls_mode=mode) as server:
        for _ in range(2):
            for client_ctx, served in ((None, plain_served), (trusting, tls_served)):
                async with RemotingClient(ssl=client_ctx) as client:
                    request = RemotingCommand.request(ECHO, body=b"hello")
                    if served:
                        response = await client.invoke(server.address, request, 5000)
                        assert response.body == b"hello"
                        tls = client.connections[server.address].get_extra_info("sslcontext")
                        assert (tls is not None) == (client_ctx is not None)
                    else:
                        with pytest.raises(RemotingError):
                            await client.invoke(server.address, request, 5000)
        assert server.tls_mode is mode


async def test_a_permissive_server_without_a_context_closes_tls_and_serves_plain() -> None:
    async with RemotingServer("127.0.0.1", 0, {ECHO: echo}, tls_mode=TlsMode.PERMISSIVE) as server:
        async with RemotingClient(ssl=TlsConfig().client_context()) as client:
            with pytest.raises(RemotingError):
                await client.invoke(server.address, RemotingCommand.request(ECHO), 5000)
        async with RemotingClient() as client:
            response = await client.invoke(server.address, RemotingCommand.request(ECHO, body=b"x"), 5000)
            assert response.body == b"x"


async def test_a_silent_connection_does_not_hold_up_others(certificate: tuple[Path, Path]) -> None:
    server_ctx, _ = contexts(certificate)
    async with RemotingServer(
        "127.0.0.1", 0, {ECHO: echo}, ssl=server_ctx, tls_mode=TlsMode.PERMISSIVE
    ) as server:
        _silent_reader, silent = await asyncio.open_connection("127.0.0.1", server.port)
        async with RemotingClient() as client:
            response = await client.invoke(server.address, RemotingCommand.request(ECHO, body=b"y"), 5000)
        assert response.body == b"y"
        silent.close()


def test_settings_use_apaches_names_and_the_file_overrides_certificates_only(tmp_path: Path) -> None:
    properties = tmp_path / "tls.properties"
    properties.write_text(
        "# Apache's format\n"
        "tls.test.mode.enable=false\n"
        "tls.server.certPath = /etc/cert.pem\n"
        "tls.server.keyPath: /etc/key.pem\n"
        "tls.server.mode=disabled\n"
    )
    config = TlsConfig.from_settings(
        {"tls.server.mode": "Enforcing", "tls.enable": "TRUE", "tls.config.file": str(properties)}
    )
    assert config.server_mode is TlsMode.ENFORCING  # the file's mode is not read, as in Apache
    assert config.enable and not config.test_mode
    assert (config.server_cert_path, config.server_key_path) == ("/etc/cert.pem", "/etc/key.pem")
    defaults = TlsConfig.from_settings({}, read_file=False)
    assert (defaults.server_mode, defaults.test_mode, defaults.enable) == (TlsMode.PERMISSIVE, True, None)
    # A server's own client (a broker's, to its NameServers) follows tls.enable, else the server's mode.
    assert not defaults.server_client_uses_tls
    assert TlsConfig(server_mode=TlsMode.ENFORCING).server_client_uses_tls
    assert not TlsConfig(server_mode=TlsMode.ENFORCING, enable=False).server_client_uses_tls
    with pytest.raises(TlsError, match="choose disabled, permissive, enforcing"):
        TlsConfig.from_settings({"tls.server.mode": "strict"}, read_file=False)
    with pytest.raises(TlsError, match="unknown TLS setting"):
        TlsConfig.from_settings({"tls.server.cert": "x"}, read_file=False)
    with pytest.raises(TlsError, match="no such file"):
        TlsConfig.from_settings({"tls.config.file": str(tmp_path / "missing")})
    with pytest.raises(TlsError, match=r"needs tls\.server\.certPath"):
        TlsConfig(test_mode=False).server_context()


def test_test_mode_serves_a_self_signed_certificate() -> None:
    pytest.importorskip("cryptography", reason="test mode's certificate needs the cryptography package")
    leftovers = lambda: sorted(Path(tempfile.gettempdir()).glob("rmq-tls-test-*"))  # noqa: E731
    before = leftovers()
    context = TlsConfig().server_context()
    assert context.verify_mode is ssl.CERT_NONE
    assert leftovers() == before, "the certificate's files outlived loading them"
    strict = TlsConfig(test_mode=False, client_auth_server=True).client_context()
    assert strict.verify_mode is ssl.CERT_REQUIRED and not strict.check_hostname

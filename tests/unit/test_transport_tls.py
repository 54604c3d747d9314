"""TLS between RemotingClient and RemotingServer, with a throwaway self-signed certificate for 127.0.0.1."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import pytest

from rocketmq_wire.codes import ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.transport import Connection, RemotingClient, RemotingConnectError, RemotingServer

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

"""Apache's Go RocketMQ client (``github.com/apache/rocketmq-client-go/v2``) as an independent test peer.

``tests/integration/go`` is a small Go program over that client which speaks the C++ peer's JSON-lines
protocol (see ``tests/integration/cpp_peer/peer.py``), so the same Python code drives the C++, Java and Go
clients: :class:`GoClient` is a :class:`~tests.integration.cpp_peer.runner.PeerClient` whose program is the
Go peer. ``build.py`` builds that program once per source version into a cache outside the work tree (the
Go client comes from the Go module proxy at build time); ``fixtures.py`` holds the pytest fixtures proposed
for ``tests/integration/conftest.py``.

Typical use, with a NameServer at ``addr``::

    consumer = go_client.start_push_consumer(addr, "Group", "Topic", count=3)
    consumer.wait_for("ready")
    spec = go_client.message("hi {i}", tags="TagA")
    sent = go_client.send_sync(addr, "Topic", [spec], extra=["--count", "3"])
    assert [o.status for o in sent.check().send_results()] == ["SEND_OK"] * 3
    received = consumer.finish().check().messages()
"""

from tests.integration.go_peer.build import (
    GoClient,
    GoPeerUnavailable,
    client_version,
    go_peer_program,
    go_peer_unavailable,
)

__all__ = ["GoClient", "GoPeerUnavailable", "client_version", "go_peer_program", "go_peer_unavailable"]

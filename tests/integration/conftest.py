"""Fixtures shared by the integration tests: real peers, each started and stopped by pid."""

from tests.integration.cpp_peer.fixtures import cpp_client, cpp_client_unavailable

__all__ = ["cpp_client", "cpp_client_unavailable"]

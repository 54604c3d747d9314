"""The embedded NameServer and Broker ``rmq quickstart`` runs: :mod:`broker.local_cluster`, which the pytest
plugin (``rocketmq_testing``) shares, named here too so the command line and its tests keep one import."""

from __future__ import annotations

from broker.local_cluster import LocalCluster, LocalClusterSettings

__all__ = ["LocalCluster", "LocalClusterSettings"]

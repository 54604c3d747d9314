"""How the embedded cluster (``broker.local_cluster``, shared by ``rmq quickstart`` and the pytest plugin)
names its brokers when asked for several."""

from __future__ import annotations

import pytest

from broker.local_cluster import broker_names


def test_a_lettered_name_goes_on_through_the_alphabet() -> None:
    assert broker_names("broker-a", 1) == ["broker-a"]
    assert broker_names("broker-a", 3) == ["broker-a", "broker-b", "broker-c"]
    assert broker_names("orders-x", 2) == ["orders-x", "orders-y"]


def test_other_names_and_the_end_of_the_alphabet_get_numbers() -> None:
    assert broker_names("main", 3) == ["main", "main-2", "main-3"]
    assert broker_names("broker-z", 2) == ["broker-z", "broker-z-2"]
    assert broker_names("broker-ab", 2) == ["broker-ab", "broker-ab-2"]


def test_a_cluster_has_a_broker() -> None:
    with pytest.raises(ValueError, match="at least one broker"):
        broker_names("broker-a", 0)

"""KV config: the namespaced table, its body, and Apache's kvConfig.json file layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from nameserver.kvconfig import NAMESPACE_ORDER_TOPIC_CONFIG, KVConfigManager
from rocketmq_wire.bodies.java_collections import in_table_order, string_hash
from rocketmq_wire.errors import CodecError


def test_put_get_delete() -> None:
    kv = KVConfigManager()
    assert kv.get("ns", "k") is None
    kv.put("ns", "k", "v1")
    kv.put("ns", "k", "v2")
    assert kv.get("ns", "k") == "v2"
    kv.delete("ns", "k")
    assert kv.get("ns", "k") is None
    kv.delete("missing-namespace", "k")  # nothing to delete is not an error
    assert kv.namespaces() == ["ns"]


def test_a_namespace_emptied_still_exists_but_one_never_written_does_not() -> None:
    kv = KVConfigManager()
    assert kv.kv_table("ns") is None
    kv.put("ns", "k", "v")
    kv.delete("ns", "k")
    table = kv.kv_table("ns")
    assert table is not None and table.table == {}
    assert table.to_json() == b'{"table":{}}'


def test_kv_table_body_as_apache_writes_it() -> None:
    kv = KVConfigManager()
    kv.put(NAMESPACE_ORDER_TOPIC_CONFIG, "GoldenOrdered", "broker-a:4")
    table = kv.kv_table(NAMESPACE_ORDER_TOPIC_CONFIG)
    assert table is not None
    assert table.to_json() == b'{"table":{"GoldenOrdered":"broker-a:4"}}'


def test_entries_keep_the_order_of_the_largest_table_the_namespace_grew_to() -> None:
    kv = KVConfigManager()
    keys = [f"topic-{i:03d}" for i in range(30)]
    for key in keys:
        kv.put("ns", key, "x")
    for key in keys[3:]:
        kv.delete("ns", key)
    table = kv.kv_table("ns")
    assert table is not None
    written = dict(table.to_bean().written())["table"]
    assert isinstance(written, dict)
    # A HashMap never shrinks: 30 entries grew it to 64 buckets, and the 3 left are listed in that order.
    assert list(written) == in_table_order(keys[:3], string_hash, 64)


def test_file_round_trip_in_apache_layout(tmp_path: Path) -> None:
    path = tmp_path / "namesrv" / "kvConfig.json"
    kv = KVConfigManager(path)
    kv.put(NAMESPACE_ORDER_TOPIC_CONFIG, "GoldenOrdered", "broker-a:4")
    assert path.read_bytes() == b'{"configTable":{"ORDER_TOPIC_CONFIG":{"GoldenOrdered":"broker-a:4"}}}'
    kv.put("other", "key", "value")
    assert (tmp_path / "namesrv" / "kvConfig.json.bak").is_file()
    again = KVConfigManager(path)
    again.load()
    assert again.get(NAMESPACE_ORDER_TOPIC_CONFIG, "GoldenOrdered") == "broker-a:4"
    assert again.get("other", "key") == "value"


def test_loads_a_file_written_by_apache(tmp_path: Path) -> None:
    path = tmp_path / "kvConfig.json"
    path.write_text('{\n\t"configTable":{\n\t\t"ORDER_TOPIC_CONFIG":{\n\t\t\t"T":"broker-a:8"\n\t\t}\n\t}\n}')
    kv = KVConfigManager(path)
    kv.load()
    assert kv.get("ORDER_TOPIC_CONFIG", "T") == "broker-a:8"


def test_missing_file_is_an_empty_table_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    kv = KVConfigManager(tmp_path / "absent.json")
    kv.load()
    assert kv.namespaces() == []
    bad = tmp_path / "bad.json"
    bad.write_text('{"configTable":{"ns":["not","an","object"]}}')
    with pytest.raises(CodecError):
        KVConfigManager(bad).load()


def test_memory_only_manager_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    KVConfigManager().put("ns", "k", "v")
    assert list(tmp_path.iterdir()) == []

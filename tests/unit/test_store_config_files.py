"""config/consumerOffset.json and config/topics.json: Apache's layouts, atomic rewrites, reload."""

from __future__ import annotations

from pathlib import Path

from broker.store.atomic_file import write_atomically
from broker.store.consumer_offsets import ConsumerOffsetStore
from broker.store.topic_configs import TopicConfigStore
from rocketmq_wire import fastjson

#: What an Apache 4.9 broker writes (pretty-printed by fastjson, bare integer keys).
APACHE_OFFSETS = """{
\t"offsetTable":{
\t\t"%RETRY%please_rename_unique_group_name_4@please_rename_unique_group_name_4":{0:0
\t\t},
\t\t"TopicTest@please_rename_unique_group_name_4":{0:250,1:249,2:250,3:251
\t\t}
\t}
}"""

APACHE_TOPICS = """{
\t"dataVersion":{
\t\t"counter":3,
\t\t"timestamp":1700000000000
\t},
\t"topicConfigTable":{
\t\t"TopicTest":{
\t\t\t"order":false,
\t\t\t"perm":6,
\t\t\t"readQueueNums":4,
\t\t\t"topicFilterType":"SINGLE_TAG",
\t\t\t"topicName":"TopicTest",
\t\t\t"topicSysFlag":0,
\t\t\t"writeQueueNums":4
\t\t}
\t}
}"""


def test_offsets_round_trip_in_apache_layout(tmp_path: Path) -> None:
    offsets = ConsumerOffsetStore(tmp_path, clock=lambda: 1234)
    offsets.commit_offset("g1", "TopicA", 0, 12)
    offsets.commit_offset("g1", "TopicA", 1, 3)
    offsets.commit_offset("g2", "TopicB", 0, 7)
    assert offsets.persist_if_dirty()
    assert not offsets.persist_if_dirty()
    text = (tmp_path / "consumerOffset.json").read_text()
    assert '"offsetTable":{"TopicA@g1":{0:12,1:3},"TopicB@g2":{0:7}}' in text
    parsed = fastjson.loads(text)
    assert parsed["dataVersion"]["counter"] == 3 and parsed["dataVersion"]["timestamp"] == 1234

    reloaded = ConsumerOffsetStore(tmp_path)
    reloaded.load()
    assert reloaded.query_offset("g1", "TopicA", 1) == 3
    assert reloaded.query_offset("g1", "TopicA", 9) == -1
    assert reloaded.offsets("g1", "TopicA") == {0: 12, 1: 3}
    assert reloaded.groups_of_topic("TopicA") == {"g1"}
    assert reloaded.topics_of_group("g2") == {"TopicB"}
    assert reloaded.data_version.counter == 3


def test_offsets_load_what_apache_writes(tmp_path: Path) -> None:
    (tmp_path / "consumerOffset.json").write_text(APACHE_OFFSETS)
    offsets = ConsumerOffsetStore(tmp_path)
    offsets.load()
    assert offsets.offsets("please_rename_unique_group_name_4", "TopicTest") == {
        0: 250,
        1: 249,
        2: 250,
        3: 251,
    }
    assert (
        offsets.query_offset(
            "please_rename_unique_group_name_4", "%RETRY%please_rename_unique_group_name_4", 0
        )
        == 0
    )


def test_offsets_fall_back_to_the_bak_file(tmp_path: Path) -> None:
    (tmp_path / "consumerOffset.json").write_text("{not json")
    (tmp_path / "consumerOffset.json.bak").write_text('{"offsetTable":{"T@g":{0:5}}}')
    offsets = ConsumerOffsetStore(tmp_path)
    offsets.load()
    assert offsets.query_offset("g", "T", 0) == 5


def test_removing_groups_and_topics(tmp_path: Path) -> None:
    offsets = ConsumerOffsetStore(tmp_path)
    offsets.commit_offset("g1", "A", 0, 1)
    offsets.commit_offset("g1", "B", 0, 1)
    offsets.commit_offset("g2", "A", 0, 1)
    offsets.remove_group("g1", topic="A")
    assert set(offsets.table()) == {("B", "g1"), ("A", "g2")}
    offsets.remove_topic("A")
    assert set(offsets.table()) == {("B", "g1")}
    version = offsets.data_version.counter
    offsets.remove_group("nobody")
    assert offsets.data_version.counter == version


def test_missing_offsets_file_means_empty(tmp_path: Path) -> None:
    offsets = ConsumerOffsetStore(tmp_path / "config")
    offsets.load()
    assert offsets.table() == {}


def test_topics_round_trip_and_load_apache_files(tmp_path: Path) -> None:
    (tmp_path / "topics.json").write_text(APACHE_TOPICS)
    topics = TopicConfigStore(tmp_path, clock=lambda: 1_800_000_000_000)
    topics.load()
    assert topics.get("TopicTest") == {
        "order": False,
        "perm": 6,
        "readQueueNums": 4,
        "topicFilterType": "SINGLE_TAG",
        "topicName": "TopicTest",
        "topicSysFlag": 0,
        "writeQueueNums": 4,
    }
    assert topics.data_version.counter == 3
    topics.put({"topicName": "Orders", "readQueueNums": 8, "writeQueueNums": 8, "attributes": {"+a": "b"}})
    assert topics.data_version.counter == 4
    text = (tmp_path / "topics.json").read_text()
    assert text.startswith('{"dataVersion":{"counter":4,"stateVersion":0,"timestamp":1800000000000}')
    assert (
        '"Orders":{"attributes":{"+a":"b"},"order":false,"perm":6,"readQueueNums":8,'
        '"topicFilterType":"SINGLE_TAG","topicName":"Orders","topicSysFlag":0,"writeQueueNums":8}'
    ) in text

    reloaded = TopicConfigStore(tmp_path)
    reloaded.load()
    assert set(reloaded.topics()) == {"TopicTest", "Orders"}
    orders = reloaded.get("Orders")
    assert orders is not None and orders["attributes"] == {"+a": "b"}
    assert reloaded.remove("TopicTest")
    assert not reloaded.remove("TopicTest")
    again = TopicConfigStore(tmp_path)
    again.load()
    assert "TopicTest" not in again and len(again) == 1


def test_atomic_write_replaces_whole_files_and_leaves_no_temporaries(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "file.json"
    write_atomically(target, b"first version")
    write_atomically(target, b"second")
    assert target.read_bytes() == b"second"
    assert [p.name for p in target.parent.iterdir()] == ["file.json"]

"""A topic change whose config file cannot be written is answered as a failure and undone in memory, so
what the broker serves is what it would read back at its next start."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from broker.store import TopicConfigStore
from broker.testing import BrokerClient, running_broker
from rocketmq_wire import ResponseCode


def _disk_full(*args: object, **kwargs: object) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_topic_that_cannot_be_saved_is_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = TopicConfigStore(tmp_path)
    store.put({"topicName": "Kept", "readQueueNums": 4, "writeQueueNums": 4})
    monkeypatch.setattr("broker.store.topic_configs.save_json_config", _disk_full)
    with pytest.raises(OSError):
        store.put({"topicName": "Lost", "readQueueNums": 8, "writeQueueNums": 8})
    with pytest.raises(OSError):
        store.put({"topicName": "Kept", "readQueueNums": 16, "writeQueueNums": 16})
    with pytest.raises(OSError):
        store.remove("Kept")
    assert "Lost" not in store
    kept = store.get("Kept")
    assert kept is not None and kept["readQueueNums"] == 4
    monkeypatch.undo()
    reloaded = TopicConfigStore(tmp_path)
    reloaded.load()
    assert set(reloaded.topics()) == set(store.topics())


async def test_a_topic_creation_the_broker_cannot_save_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running_broker(tmp_path / "store") as broker, BrokerClient(broker.address) as client:
        monkeypatch.setattr("broker.store.topic_configs.save_json_config", _disk_full)
        answer = await client.create_topic("NotSaved")
        assert answer.code == ResponseCode.SYSTEM_ERROR
        assert "No space left on device" in (answer.remark or "")
        assert not broker.topic_exists("NotSaved")
        monkeypatch.undo()
        assert (await client.create_topic("Saved")).code == ResponseCode.SUCCESS
        assert broker.topic_exists("Saved")


async def test_a_topic_of_more_queues_than_anyone_can_walk_is_refused(tmp_path: Path) -> None:
    """Found by the fuzz run: a topic created with 2^31-1 write queues made the next GET_TOPIC_STATS_INFO
    walk every one of them on the event loop, and the broker stopped answering."""
    async with running_broker(tmp_path / "store") as broker, BrokerClient(broker.address) as client:
        answer = await client.create_topic("Huge", queues=2**31 - 1)
        assert answer.code == ResponseCode.SYSTEM_ERROR
        assert "must lie in [0, 65536]" in (answer.remark or "")
        assert not broker.topic_exists("Huge")
        assert (await client.create_topic("Wide", queues=1024)).code == ResponseCode.SUCCESS

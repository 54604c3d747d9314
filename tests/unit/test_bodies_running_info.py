"""ConsumerRunningInfo and ConsumeMessageDirectlyResult: the exact text fastjson writes for Java's classes.

The golden captures hold no GET_CONSUMER_RUNNING_INFO or CONSUME_MESSAGE_DIRECTLY exchange, so the expected
texts here follow fastjson's rules as the other bodies' goldens confirm them (bean properties sorted by
name, nulls left out, doubles as ``Double.toString``, map keys that are objects written bare) and Java's
collections: ``TreeMap`` / ``TreeSet`` in ``compareTo`` order (UTF-16 code units for strings), and
``Properties`` (a ``ConcurrentHashMap`` on Java 9+) in hash order.
"""

from __future__ import annotations

import pytest

from rocketmq_wire.bodies import (
    CMResult,
    ConsumeMessageDirectlyResult,
    ConsumerRunningInfo,
    MessageQueue,
    PopProcessQueueInfo,
    ProcessQueueInfo,
    SubscriptionData,
    TopicConsumeStatus,
    decode_response_body,
)
from rocketmq_wire.errors import CodecError

PQ_INFO = ProcessQueueInfo(
    commit_offset=7,
    cached_msg_min_offset=8,
    cached_msg_max_offset=9,
    cached_msg_count=2,
    cached_msg_size_in_mib=1,
    transaction_msg_min_offset=3,
    transaction_msg_max_offset=4,
    transaction_msg_count=5,
    locked=True,
    try_unlock_times=6,
    last_lock_timestamp=1_700_000_000_001,
    dropped=False,
    last_pull_timestamp=1_700_000_000_002,
    last_consume_timestamp=1_700_000_000_003,
)
PQ_INFO_JSON = (
    '{"cachedMsgCount":2,"cachedMsgMaxOffset":9,"cachedMsgMinOffset":8,"cachedMsgSizeInMiB":1,'
    '"commitOffset":7,"droped":false,"lastConsumeTimestamp":1700000000003,"lastLockTimestamp":1700000000001,'
    '"lastPullTimestamp":1700000000002,"locked":true,"transactionMsgCount":5,"transactionMsgMaxOffset":4,'
    '"transactionMsgMinOffset":3,"tryUnlockTimes":6}'
)
STATUS = TopicConsumeStatus(
    pull_rt=12.5, pull_tps=0.1, consume_rt=12345678.0, consume_ok_tps=3.0, consume_failed_tps=0.0,
    consume_failed_msgs=42,
)  # fmt: skip
STATUS_JSON = (
    '{"consumeFailedMsgs":42,"consumeFailedTPS":0.0,"consumeOKTPS":3.0,"consumeRT":1.2345678E7,'
    '"pullRT":12.5,"pullTPS":0.1}'
)


def _subscription(topic: str, expression: str, tags: list[str]) -> SubscriptionData:
    return SubscriptionData(topic=topic, sub_string=expression, tags_set=tags, code_set=[], sub_version=5)


def _info(*, v5: bool) -> ConsumerRunningInfo:
    queue = MessageQueue(topic="T", broker_name="broker-a", queue_id=1)
    return ConsumerRunningInfo(
        # inserted b, a, aa: written in hash order aa (bucket 0), a (1), b (2) -- neither as given nor sorted
        properties={"b": "3", "a": "1", "aa": "2"},
        subscription_set=[_subscription("T", "TagA", ["TagA"]), _subscription("%RETRY%G", "*", [])],
        mq_table={queue: PQ_INFO},
        status_table={"T": STATUS, "%RETRY%G": TopicConsumeStatus()},
        jstack="main  TID: 1\n",
        mq_pop_table={} if v5 else None,
        user_consumer_info={} if v5 else None,
    )


ZERO_STATUS = (
    '{"consumeFailedMsgs":0,"consumeFailedTPS":0.0,"consumeOKTPS":0.0,"consumeRT":0.0,'
    '"pullRT":0.0,"pullTPS":0.0}'
)
SUBSCRIPTIONS = (
    '[{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"*","subVersion":5,'
    '"tagsSet":[],"topic":"%RETRY%G"},'
    '{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"TagA","subVersion":5,'
    '"tagsSet":["TagA"],"topic":"T"}]'
)


def test_a_4x_running_info_is_written_as_fastjson_writes_the_java_class() -> None:
    expected = (
        '{"jstack":"main  TID: 1\\n",'
        '"mqTable":{{"brokerName":"broker-a","queueId":1,"topic":"T"}:' + PQ_INFO_JSON + "},"
        '"properties":{"aa":"2","a":"1","b":"3"},'
        '"statusTable":{"%RETRY%G":' + ZERO_STATUS + ',"T":' + STATUS_JSON + "},"
        '"subscriptionSet":' + SUBSCRIPTIONS + "}"
    )
    assert _info(v5=False).to_json() == expected.encode()


def test_a_5x_running_info_adds_the_empty_pop_and_user_tables() -> None:
    text = _info(v5=True).to_json().decode()
    assert '"jstack":"main  TID: 1\\n","mqPopTable":{},"mqTable":{{' in text
    assert text.endswith('"subscriptionSet":' + SUBSCRIPTIONS + ',"userConsumerInfo":{}}')


def test_tree_tables_are_in_java_compare_to_order() -> None:
    queues = [
        MessageQueue(topic="T", broker_name="broker-b", queue_id=0),
        MessageQueue(topic="T", broker_name="broker-a", queue_id=10),
        MessageQueue(topic="T", broker_name="broker-a", queue_id=2),
        MessageQueue(topic="S", broker_name="broker-z", queue_id=0),
    ]
    info = ConsumerRunningInfo(
        mq_table={q: ProcessQueueInfo() for q in queues},
        # U+1F600 is a surrogate pair (D83D DE00) in Java, so it sorts before U+FFFD there
        status_table={"\ufffd": TopicConsumeStatus(), "\U0001f600": TopicConsumeStatus()},
        subscription_set=[
            _subscription("T", "b", ["b"]),
            _subscription("T", "a", ["a"]),
            _subscription("T", "a", ["a", "x"]),  # equal to the one before for compareTo: a TreeSet drops it
        ],
    )
    back = ConsumerRunningInfo.from_json(info.to_json())
    assert [(q.topic, q.broker_name, q.queue_id) for q in back.mq_table] == [
        ("S", "broker-z", 0),
        ("T", "broker-a", 2),
        ("T", "broker-a", 10),
        ("T", "broker-b", 0),
    ]
    assert list(back.status_table) == ["\U0001f600", "\ufffd"]
    assert [(s.sub_string, s.tags_set) for s in back.subscription_set] == [("a", ["a"]), ("b", ["b"])]


def test_reading_keeps_values_and_writes_a_java_body_back_unchanged() -> None:
    original = _info(v5=True).to_json()
    back = ConsumerRunningInfo.from_json(original)
    assert back.properties == {"aa": "2", "a": "1", "b": "3"}
    assert back.mq_table == {MessageQueue(topic="T", broker_name="broker-a", queue_id=1): PQ_INFO}
    assert back.status_table["T"] == STATUS
    assert back.mq_pop_table == {} and back.user_consumer_info == {}
    assert back.to_json() == original


def test_properties_no_hash_table_explains_are_written_back_as_read() -> None:
    # b before a fits no ConcurrentHashMap (a Java 8 Hashtable wrote it): keep the order read
    text = b'{"mqTable":{},"properties":{"b":"3","a":"1"},"statusTable":{},"subscriptionSet":[]}'
    assert ConsumerRunningInfo.from_json(text).to_json() == text


def test_pop_queue_info_and_an_absent_5x_table() -> None:
    queue = MessageQueue(topic="T", broker_name="b", queue_id=0)
    info = ConsumerRunningInfo(
        mq_pop_table={queue: PopProcessQueueInfo(wait_ack_count=3, last_pop_timestamp=9)}
    )
    text = info.to_json().decode()
    assert '"mqPopTable":{{"brokerName":"b","queueId":0,"topic":"T"}:' in text
    assert '{"droped":false,"lastPopTimestamp":9,"waitAckCount":3}' in text
    assert ConsumerRunningInfo.from_json(text).mq_pop_table == info.mq_pop_table
    assert ConsumerRunningInfo.from_json(b"{}").mq_pop_table is None


def test_consume_message_directly_result() -> None:
    result = ConsumeMessageDirectlyResult(
        consume_result=CMResult.CR_THROW_EXCEPTION, remark="ValueError: boom", spent_time_mills=12
    )
    expected = (
        b'{"autoCommit":true,"consumeResult":"CR_THROW_EXCEPTION","order":false,'
        b'"remark":"ValueError: boom","spentTimeMills":12}'
    )
    assert result.to_json() == expected
    assert ConsumeMessageDirectlyResult.from_json(expected) == result
    # a null result is left out; Java's defaults fill what is missing; an ordinal names the constant
    assert ConsumeMessageDirectlyResult(order=True).to_json() == (
        b'{"autoCommit":true,"order":true,"spentTimeMills":0}'
    )
    assert ConsumeMessageDirectlyResult.from_json(b'{"consumeResult":1}') == ConsumeMessageDirectlyResult(
        consume_result=CMResult.CR_LATER
    )
    assert [r.value for r in CMResult] == [
        "CR_SUCCESS", "CR_LATER", "CR_ROLLBACK", "CR_COMMIT", "CR_THROW_EXCEPTION", "CR_RETURN_NULL",
    ]  # fmt: skip
    with pytest.raises(CodecError):
        ConsumeMessageDirectlyResult.from_json(b'{"consumeResult":"CR_MAYBE"}')


def test_registry_knows_both_answers() -> None:
    decoded = decode_response_body(307, _info(v5=False).to_json())
    assert isinstance(decoded, ConsumerRunningInfo)
    assert decoded.to_json() == _info(v5=False).to_json()
    assert [s.topic for s in decoded.subscription_set] == ["%RETRY%G", "T"]  # as written: TreeSet order
    result = ConsumeMessageDirectlyResult(consume_result=CMResult.CR_SUCCESS)
    assert decode_response_body(309, result.to_json()) == result
    with pytest.raises(CodecError):
        decode_response_body(307, b'{"mqTable":[]}')

"""Message property names and the separators of the properties string.

The names are the exact strings Java peers put on the wire (``MessageConst``). A Java producer refuses a user
property whose name is one of the broker's own (:data:`SYSTEM_PROPERTY_NAMES`); we refuse the same names so a
message we build is one a Java client could have built.
"""

from __future__ import annotations

from typing import Final

#: Between a property's name and its value.
NAME_VALUE_SEPARATOR: Final = "\x01"
#: Between two name/value pairs (and, in 5.x and the C++ client, after the last one too).
PROPERTY_SEPARATOR: Final = "\x02"
#: Between the keys of a message inside the ``KEYS`` property.
KEY_SEPARATOR: Final = " "

# --- set by producers -----------------------------------------------------------------------------
KEYS: Final = "KEYS"
TAGS: Final = "TAGS"
WAIT: Final = "WAIT"
DELAY: Final = "DELAY"
UNIQ_KEY: Final = "UNIQ_KEY"
TRAN_MSG: Final = "TRAN_MSG"
PGROUP: Final = "PGROUP"
BUYER_ID: Final = "BUYER_ID"
MAX_RECONSUME_TIMES: Final = "MAX_RECONSUME_TIMES"
CHECK_IMMUNITY_TIME_IN_SECONDS: Final = "CHECK_IMMUNITY_TIME_IN_SECONDS"
INSTANCE_ID: Final = "INSTANCE_ID"
CORRELATION_ID: Final = "CORRELATION_ID"
REPLY_TO_CLIENT: Final = "REPLY_TO_CLIENT"
TTL: Final = "TTL"
ARRIVE_TIME: Final = "ARRIVE_TIME"
PUSH_REPLY_TIME: Final = "PUSH_REPLY_TIME"
MSG_TYPE: Final = "MSG_TYPE"
SHARDING_KEY: Final = "__SHARDINGKEY"
#: Commercial (ONS) scheduled delivery; not in ``MessageConst`` but honoured by Java hooks and 5.x brokers.
START_DELIVER_TIME: Final = "__STARTDELIVERTIME"
TRACE_CONTEXT: Final = "TRACE_CONTEXT"

# --- set by brokers and consumers -----------------------------------------------------------------
RETRY_TOPIC: Final = "RETRY_TOPIC"
REAL_TOPIC: Final = "REAL_TOPIC"
REAL_QID: Final = "REAL_QID"
MIN_OFFSET: Final = "MIN_OFFSET"
MAX_OFFSET: Final = "MAX_OFFSET"
ORIGIN_MESSAGE_ID: Final = "ORIGIN_MESSAGE_ID"
#: The group a POP message was revived for (5.5 on): the retry topic is shared by name only.
ORIGIN_GROUP: Final = "ORIGIN_GROUP"
TRANSFER_FLAG: Final = "TRANSFER_FLAG"
CORRECTION_FLAG: Final = "CORRECTION_FLAG"
MQ2_FLAG: Final = "MQ2_FLAG"
RECONSUME_TIME: Final = "RECONSUME_TIME"
MSG_REGION: Final = "MSG_REGION"
TRACE_ON: Final = "TRACE_ON"
EXTEND_UNIQ_INFO: Final = "EXTEND_UNIQ_INFO"
CONSUME_START_TIME: Final = "CONSUME_START_TIME"
INNER_NUM: Final = "INNER_NUM"
INNER_BASE: Final = "INNER_BASE"
DUP_INFO: Final = "DUP_INFO"
TRAN_PREPARED_QUEUE_OFFSET: Final = "TRAN_PREPARED_QUEUE_OFFSET"
TRANSACTION_ID: Final = "__transactionId__"
TRANSACTION_CHECK_TIMES: Final = "TRANSACTION_CHECK_TIMES"
CLUSTER: Final = "CLUSTER"
POP_CK: Final = "POP_CK"
POP_CK_OFFSET: Final = "POP_CK_OFFSET"
FIRST_POP_TIME: Final = "1ST_POP_TIME"
FORWARD_QUEUE_ID: Final = "PROPERTY_FORWARD_QUEUE_ID"
REDIRECT: Final = "REDIRECT"
INNER_MULTI_DISPATCH: Final = "INNER_MULTI_DISPATCH"
INNER_MULTI_QUEUE_OFFSET: Final = "INNER_MULTI_QUEUE_OFFSET"
BORN_HOST: Final = "__BORNHOST"
BORN_TIMESTAMP: Final = "BORN_TIMESTAMP"
DLQ_ORIGIN_TOPIC: Final = "DLQ_ORIGIN_TOPIC"
DLQ_ORIGIN_MESSAGE_ID: Final = "DLQ_ORIGIN_MESSAGE_ID"
#: 5.x brokers configured to append a properties CRC write it under this name (value: 10 digits).
CRC32: Final = "__CRC32#"

# --- 5.x timer (scheduled) messages ---------------------------------------------------------------
TIMER_DELAY_SEC: Final = "TIMER_DELAY_SEC"
TIMER_DELAY_MS: Final = "TIMER_DELAY_MS"
TIMER_DELIVER_MS: Final = "TIMER_DELIVER_MS"
TIMER_ENQUEUE_MS: Final = "TIMER_ENQUEUE_MS"
TIMER_DEQUEUE_MS: Final = "TIMER_DEQUEUE_MS"
TIMER_ROLL_TIMES: Final = "TIMER_ROLL_TIMES"
TIMER_OUT_MS: Final = "TIMER_OUT_MS"
TIMER_DEL_UNIQKEY: Final = "TIMER_DEL_UNIQKEY"
TIMER_DELAY_LEVEL: Final = "TIMER_DELAY_LEVEL"

#: Properties whose name starts with this are never stored by a broker.
TRANSIENT_PREFIX: Final = "__RMQ.TRANSIENT."
TRANSIENT_TOPIC_CONFIG: Final = TRANSIENT_PREFIX + "TOPIC_SYS_FLAG"
TRANSIENT_GROUP_CONFIG: Final = TRANSIENT_PREFIX + "GROUP_SYS_FLAG"

#: Names a Java producer refuses as user properties (the 5.x ``MessageConst`` set, a superset of 4.9.x's).
SYSTEM_PROPERTY_NAMES: Final[frozenset[str]] = frozenset(
    {
        TRACE_ON,
        MSG_REGION,
        KEYS,
        TAGS,
        WAIT,
        DELAY,
        RETRY_TOPIC,
        REAL_TOPIC,
        REAL_QID,
        TRAN_MSG,
        PGROUP,
        MIN_OFFSET,
        MAX_OFFSET,
        BUYER_ID,
        ORIGIN_MESSAGE_ID,
        TRANSFER_FLAG,
        CORRECTION_FLAG,
        MQ2_FLAG,
        RECONSUME_TIME,
        UNIQ_KEY,
        MAX_RECONSUME_TIMES,
        CONSUME_START_TIME,
        POP_CK,
        POP_CK_OFFSET,
        FIRST_POP_TIME,
        TRAN_PREPARED_QUEUE_OFFSET,
        DUP_INFO,
        EXTEND_UNIQ_INFO,
        INSTANCE_ID,
        CORRELATION_ID,
        REPLY_TO_CLIENT,
        TTL,
        ARRIVE_TIME,
        PUSH_REPLY_TIME,
        CLUSTER,
        MSG_TYPE,
        INNER_MULTI_QUEUE_OFFSET,
        TIMER_DELAY_MS,
        TIMER_DELAY_SEC,
        TIMER_DELIVER_MS,
        TIMER_ENQUEUE_MS,
        TIMER_DEQUEUE_MS,
        TIMER_ROLL_TIMES,
        TIMER_OUT_MS,
        TIMER_DEL_UNIQKEY,
        TIMER_DELAY_LEVEL,
        BORN_HOST,
        BORN_TIMESTAMP,
        DLQ_ORIGIN_TOPIC,
        DLQ_ORIGIN_MESSAGE_ID,
    }
)

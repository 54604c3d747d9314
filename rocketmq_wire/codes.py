"""Every numeric code of the remoting protocol, in one place.

Request codes, response codes, language codes, serialize types and the version numbers Java peers put in
``RemotingCommand.version``. Values are Apache's (4.9.x plus the 5.x additions); unknown values read off the
wire are kept as pseudo-members rather than rejected, because newer peers add codes faster than we do.
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar

from rocketmq_wire.errors import CodecError


class _OpenIntEnum(enum.IntEnum):
    """An IntEnum that keeps unknown values instead of raising, so decoding never fails on a new code."""

    @classmethod
    def _missing_(cls, value: object) -> Any:
        if not isinstance(value, int):
            return None
        member = int.__new__(cls, value)
        member._name_ = f"UNKNOWN_{value}"
        member._value_ = value
        return member


class SerializeType(_OpenIntEnum):
    """How the header of a frame is serialized (the high byte of the header-length word)."""

    JSON = 0
    ROCKETMQ = 1


class LanguageCode(_OpenIntEnum):
    """The ``language`` a peer announces; JSON headers carry the name, binary headers the byte.

    ``RUST`` and ``NODE_JS`` came with 5.x; a 4.9.x Java peer cannot parse those names in a JSON header, so
    only announce them to peers that know them. ``UNKNOWN`` is this library's own marker, not a Java value.
    """

    JAVA = 0
    CPP = 1
    DOTNET = 2
    PYTHON = 3
    DELPHI = 4
    ERLANG = 5
    RUBY = 6
    OTHER = 7
    HTTP = 8
    GO = 9
    PHP = 10
    OMS = 11
    RUST = 12
    NODE_JS = 13
    UNKNOWN = 127


class RequestCode(_OpenIntEnum):
    """Request codes (``RequestCode.java``): every 4.9.x code plus the ones 5.x added.

    Grouped by the component that serves them; the names are Java's, so logs and docs line up with upstream.
    """

    # Broker: messages, offsets, topics, clients.
    SEND_MESSAGE = 10
    PULL_MESSAGE = 11
    QUERY_MESSAGE = 12
    QUERY_BROKER_OFFSET = 13
    QUERY_CONSUMER_OFFSET = 14
    UPDATE_CONSUMER_OFFSET = 15
    UPDATE_AND_CREATE_TOPIC = 17
    UPDATE_AND_CREATE_TOPIC_LIST = 18
    GET_ALL_TOPIC_CONFIG = 21
    GET_TOPIC_CONFIG_LIST = 22
    GET_TOPIC_NAME_LIST = 23
    UPDATE_BROKER_CONFIG = 25
    GET_BROKER_CONFIG = 26
    TRIGGER_DELETE_FILES = 27
    GET_BROKER_RUNTIME_INFO = 28
    SEARCH_OFFSET_BY_TIMESTAMP = 29
    GET_MAX_OFFSET = 30
    GET_MIN_OFFSET = 31
    GET_EARLIEST_MSG_STORETIME = 32
    VIEW_MESSAGE_BY_ID = 33
    HEART_BEAT = 34
    UNREGISTER_CLIENT = 35
    CONSUMER_SEND_MSG_BACK = 36
    END_TRANSACTION = 37
    GET_CONSUMER_LIST_BY_GROUP = 38
    CHECK_TRANSACTION_STATE = 39
    NOTIFY_CONSUMER_IDS_CHANGED = 40
    LOCK_BATCH_MQ = 41
    UNLOCK_BATCH_MQ = 42
    GET_ALL_CONSUMER_OFFSET = 43
    GET_ALL_DELAY_OFFSET = 45
    CHECK_CLIENT_CONFIG = 46
    GET_CLIENT_CONFIG = 47

    # ACL (plain-ACL era) and timer.
    UPDATE_AND_CREATE_ACL_CONFIG = 50
    DELETE_ACL_CONFIG = 51
    GET_BROKER_CLUSTER_ACL_INFO = 52
    UPDATE_GLOBAL_WHITE_ADDRS_CONFIG = 53
    GET_BROKER_CLUSTER_ACL_CONFIG = 54
    GET_TIMER_CHECK_POINT = 60
    GET_TIMER_METRICS = 61

    # NameServer.
    PUT_KV_CONFIG = 100
    GET_KV_CONFIG = 101
    DELETE_KV_CONFIG = 102
    REGISTER_BROKER = 103
    UNREGISTER_BROKER = 104
    GET_ROUTEINFO_BY_TOPIC = 105
    GET_BROKER_CLUSTER_INFO = 106

    # Administration.
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP = 200
    GET_ALL_SUBSCRIPTIONGROUP_CONFIG = 201
    GET_TOPIC_STATS_INFO = 202
    GET_CONSUMER_CONNECTION_LIST = 203
    GET_PRODUCER_CONNECTION_LIST = 204
    WIPE_WRITE_PERM_OF_BROKER = 205
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
    DELETE_SUBSCRIPTIONGROUP = 207
    GET_CONSUME_STATS = 208
    SUSPEND_CONSUMER = 209
    RESUME_CONSUMER = 210
    RESET_CONSUMER_OFFSET_IN_CONSUMER = 211
    RESET_CONSUMER_OFFSET_IN_BROKER = 212
    ADJUST_CONSUMER_THREAD_POOL = 213
    WHO_CONSUME_THE_MESSAGE = 214
    DELETE_TOPIC_IN_BROKER = 215
    DELETE_TOPIC_IN_NAMESRV = 216
    REGISTER_TOPIC_IN_NAMESRV = 217
    GET_KVLIST_BY_NAMESPACE = 219
    RESET_CONSUMER_CLIENT_OFFSET = 220
    GET_CONSUMER_STATUS_FROM_CLIENT = 221
    INVOKE_BROKER_TO_RESET_OFFSET = 222
    INVOKE_BROKER_TO_GET_CONSUMER_STATUS = 223
    GET_TOPICS_BY_CLUSTER = 224
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST = 225
    QUERY_TOPIC_CONSUME_BY_WHO = 300
    REGISTER_FILTER_SERVER = 301
    REGISTER_MESSAGE_FILTER_CLASS = 302
    QUERY_CONSUME_TIME_SPAN = 303
    GET_SYSTEM_TOPIC_LIST_FROM_NS = 304
    GET_SYSTEM_TOPIC_LIST_FROM_BROKER = 305
    CLEAN_EXPIRED_CONSUMEQUEUE = 306
    GET_CONSUMER_RUNNING_INFO = 307
    QUERY_CORRECTION_OFFSET = 308
    CONSUME_MESSAGE_DIRECTLY = 309
    SEND_MESSAGE_V2 = 310
    GET_UNIT_TOPIC_LIST = 311
    GET_HAS_UNIT_SUB_TOPIC_LIST = 312
    GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST = 313
    CLONE_GROUP_OFFSET = 314
    VIEW_BROKER_STATS_DATA = 315
    CLEAN_UNUSED_TOPIC = 316
    GET_BROKER_CONSUME_STATS = 317
    UPDATE_NAMESRV_CONFIG = 318
    GET_NAMESRV_CONFIG = 319
    SEND_BATCH_MESSAGE = 320
    QUERY_CONSUME_QUEUE = 321
    QUERY_DATA_VERSION = 322
    RESUME_CHECK_HALF_MESSAGE = 323
    SEND_REPLY_MESSAGE = 324
    SEND_REPLY_MESSAGE_V2 = 325
    PUSH_REPLY_MESSAGE_TO_CLIENT = 326
    ADD_WRITE_PERM_OF_BROKER = 327
    GET_ALL_PRODUCER_INFO = 328
    DELETE_EXPIRED_COMMITLOG = 329
    QUERY_TOPICS_BY_CONSUMER = 343
    QUERY_SUBSCRIPTION_BY_CONSUMER = 345
    GET_TOPIC_CONFIG = 351
    GET_SUBSCRIPTIONGROUP_CONFIG = 352
    UPDATE_AND_GET_GROUP_FORBIDDEN = 353
    CHECK_ROCKSDB_CQ_WRITE_PROGRESS = 354
    LITE_PULL_MESSAGE = 361
    RECALL_MESSAGE = 370
    QUERY_ASSIGNMENT = 400
    SET_MESSAGE_REQUEST_MODE = 401
    GET_ALL_MESSAGE_REQUEST_MODE = 402
    UPDATE_AND_CREATE_STATIC_TOPIC = 513

    # Broker container / master-slave (5.x).
    GET_BROKER_MEMBER_GROUP = 901
    ADD_BROKER = 902
    REMOVE_BROKER = 903
    BROKER_HEARTBEAT = 904
    NOTIFY_MIN_BROKER_ID_CHANGE = 905
    EXCHANGE_BROKER_HA_INFO = 906
    GET_BROKER_HA_STATUS = 907
    RESET_MASTER_FLUSH_OFFSET = 908

    # Controller (5.x).
    CONTROLLER_ALTER_SYNC_STATE_SET = 1001
    CONTROLLER_ELECT_MASTER = 1002
    CONTROLLER_REGISTER_BROKER = 1003
    CONTROLLER_GET_REPLICA_INFO = 1004
    CONTROLLER_GET_METADATA_INFO = 1005
    CONTROLLER_GET_SYNC_STATE_DATA = 1006
    GET_BROKER_EPOCH_CACHE = 1007
    NOTIFY_BROKER_ROLE_CHANGED = 1008
    UPDATE_CONTROLLER_CONFIG = 1009
    GET_CONTROLLER_CONFIG = 1010
    CLEAN_BROKER_DATA = 1011
    CONTROLLER_GET_NEXT_BROKER_ID = 1012
    CONTROLLER_APPLY_BROKER_ID = 1013
    BROKER_CLOSE_CHANNEL_REQUEST = 1014
    CHECK_NOT_ACTIVE_BROKER_REQUEST = 1015
    GET_BROKER_LIVE_INFO_REQUEST = 1016
    GET_SYNC_STATE_DATA_REQUEST = 1017
    RAFT_BROKER_HEART_BEAT_EVENT_REQUEST = 1018

    # Tiered storage (5.x).
    UPDATE_COLD_DATA_FLOW_CTR_CONFIG = 2001
    REMOVE_COLD_DATA_FLOW_CTR_CONFIG = 2002
    GET_COLD_DATA_FLOW_CTR_INFO = 2003
    SET_COMMITLOG_READ_MODE = 2004

    # Authentication / authorization (5.3).
    AUTH_CREATE_USER = 3001
    AUTH_UPDATE_USER = 3002
    AUTH_DELETE_USER = 3003
    AUTH_GET_USER = 3004
    AUTH_LIST_USER = 3005
    AUTH_CREATE_ACL = 3006
    AUTH_UPDATE_ACL = 3007
    AUTH_DELETE_ACL = 3008
    AUTH_GET_ACL = 3009
    AUTH_LIST_ACL = 3010

    # Pop consumption (5.x; RIP-19 numbered these 2000xx, what Apache's client and broker send).
    POP_MESSAGE = 200050
    ACK_MESSAGE = 200051
    PEEK_MESSAGE = 200052
    CHANGE_MESSAGE_INVISIBLETIME = 200053
    NOTIFICATION = 200054
    POLLING_INFO = 200055
    POP_ROLLBACK = 200056
    BATCH_ACK_MESSAGE = 200151

    # LiteTopic (5.5): light topics under a LITE parent topic. The consumption codes (70-73) are sent by
    # Apache's proxy only; the rest are mqadmin's lite commands.
    POP_LITE_MESSAGE = 200070
    LITE_SUBSCRIPTION_CTL = 200071
    ACK_LITE_MESSAGE = 200072
    NOTIFY_UNSUBSCRIBE_LITE = 200073
    GET_BROKER_LITE_INFO = 200074
    GET_PARENT_TOPIC_INFO = 200075
    GET_LITE_TOPIC_INFO = 200076
    GET_LITE_CLIENT_INFO = 200077
    GET_LITE_GROUP_INFO = 200078
    TRIGGER_LITE_DISPATCH = 200079


class ResponseCode(_OpenIntEnum):
    """Response codes (``ResponseCode.java`` and ``RemotingSysResponseCode.java``).

    5.x reused 209-211 (ACL failures in 4.9.x) for pop polling and broker lookup, and 29 changed meaning along
    the way; the 5.x names are the members, the older names are aliases of the same values. What a number
    means therefore depends on the peer's version.
    """

    # RemotingSysResponseCode.
    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    REQUEST_CODE_NOT_SUPPORTED = 3
    TRANSACTION_FAILED = 4

    FLUSH_DISK_TIMEOUT = 10
    SLAVE_NOT_AVAILABLE = 11
    FLUSH_SLAVE_TIMEOUT = 12
    MESSAGE_ILLEGAL = 13
    SERVICE_NOT_AVAILABLE = 14
    VERSION_NOT_SUPPORTED = 15
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    TOPIC_EXIST_ALREADY = 18
    PULL_NOT_FOUND = 19
    PULL_RETRY_IMMEDIATELY = 20
    PULL_OFFSET_MOVED = 21
    QUERY_NOT_FOUND = 22
    SUBSCRIPTION_PARSE_FAILED = 23
    SUBSCRIPTION_NOT_EXIST = 24
    SUBSCRIPTION_NOT_LATEST = 25
    SUBSCRIPTION_GROUP_NOT_EXIST = 26
    FILTER_DATA_NOT_EXIST = 27
    FILTER_DATA_NOT_LATEST = 28
    INVALID_PARAMETER = 29
    FLUSH_DISK_FAILED = 29

    TRANSACTION_SHOULD_COMMIT = 200
    TRANSACTION_SHOULD_ROLLBACK = 201
    TRANSACTION_STATE_UNKNOW = 202
    TRANSACTION_STATE_GROUP_WRONG = 203
    NO_BUYER_ID = 204
    NOT_IN_CURRENT_UNIT = 205
    CONSUMER_NOT_ONLINE = 206
    CONSUME_MSG_TIMEOUT = 207
    NO_MESSAGE = 208
    POLLING_FULL = 209
    UPDATE_AND_CREATE_ACL_CONFIG_FAILED = 209
    POLLING_TIMEOUT = 210
    DELETE_ACL_CONFIG_FAILED = 210
    BROKER_NOT_EXIST = 211
    UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED = 211
    BROKER_DISPATCH_NOT_COMPLETE = 212
    BROADCAST_CONSUMPTION = 213
    FLOW_CONTROL = 215
    NOT_LEADER_FOR_QUEUE = 501
    ILLEGAL_OPERATION = 604

    # Client-side RPC failures (never on the wire from a server, but reported with these numbers).
    RPC_UNKNOWN = -1000
    RPC_ADDR_IS_NULL = -1002
    RPC_SEND_TO_CHANNEL_FAILED = -1004
    RPC_TIME_OUT = -1006

    GO_AWAY = 1500

    # Controller (5.x).
    CONTROLLER_FENCED_MASTER_EPOCH = 2000
    CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH = 2001
    CONTROLLER_INVALID_MASTER = 2002
    CONTROLLER_INVALID_REPLICAS = 2003
    CONTROLLER_MASTER_NOT_AVAILABLE = 2004
    CONTROLLER_INVALID_REQUEST = 2005
    CONTROLLER_BROKER_NOT_ALIVE = 2006
    CONTROLLER_NOT_LEADER = 2007
    CONTROLLER_BROKER_METADATA_NOT_EXIST = 2008
    CONTROLLER_INVALID_CLEAN_BROKER_METADATA = 2009
    CONTROLLER_BROKER_NEED_TO_BE_REGISTERED = 2010
    CONTROLLER_MASTER_STILL_EXIST = 2011
    CONTROLLER_ELECT_MASTER_FAILED = 2012
    CONTROLLER_ALTER_SYNC_STATE_SET_FAILED = 2013
    CONTROLLER_BROKER_ID_INVALID = 2014
    CONTROLLER_JRAFT_INTERNAL_ERROR = 2015
    CONTROLLER_BROKER_LIVE_INFO_NOT_EXISTS = 2016

    # LMQ and LiteTopic quotas (5.5).
    LMQ_QUOTA_EXCEEDED = 2017
    LITE_SUBSCRIPTION_QUOTA_EXCEEDED = 2018

    # Authentication / authorization (5.3).
    USER_NOT_EXIST = 3001
    POLICY_NOT_EXIST = 3002


def _version_names() -> tuple[str, ...]:
    """Java's ``MQVersion.Version`` constants in declaration order, so that a name's index is its number.

    The enum is regular after 3.0.0: every release has a ``_SNAPSHOT`` entry right before it; 3.0.x runs to
    patch 15, the other minors to patch 9, and 3.3 to 3.9 start at patch 1 instead of 0.
    """
    names = ["V3_0_0_SNAPSHOT", "V3_0_0_ALPHA1"]
    names += [f"V3_0_0_BETA{n}" for n in range(1, 6)]
    for n in range(6, 10):
        names += [f"V3_0_0_BETA{n}_SNAPSHOT", f"V3_0_0_BETA{n}"]
    names.append("V3_0_0_FINAL")

    def release(major: int, minor: int, patch: int) -> list[str]:
        return [f"V{major}_{minor}_{patch}_SNAPSHOT", f"V{major}_{minor}_{patch}"]

    for patch in range(1, 16):
        names += release(3, 0, patch)
    for minor in range(1, 10):
        first = 0 if minor < 3 else 1
        for patch in range(first, 10):
            names += release(3, minor, patch)
    for major in (4, 5):
        for minor in range(10):
            for patch in range(10):
                names += release(major, minor, patch)
    names.append("HIGHER_VERSION")
    return tuple(names)


class MQVersion:
    """``RemotingCommand.version`` numbers: the ordinal of a Java ``MQVersion.Version`` constant.

    Java peers put ``CURRENT_VERSION`` there (409 from 4.9.8, 479 from 5.3.3) and brokers compare against it
    to decide what a client understands, so the numbers must be Java's exactly.
    """

    NAMES: ClassVar[tuple[str, ...]] = _version_names()
    V4_9_8: ClassVar[int] = NAMES.index("V4_9_8")
    V5_3_3: ClassVar[int] = NAMES.index("V5_3_3")
    V5_5_0: ClassVar[int] = NAMES.index("V5_5_0")
    HIGHER_VERSION: ClassVar[int] = len(NAMES) - 1

    @classmethod
    def name_of(cls, value: int) -> str:
        """The constant's name for a version number; numbers past the table read as ``HIGHER_VERSION``.

        That clamping is Java's ``getVersionDesc``: a peer newer than this table is still "some later one".
        """
        if value < 0:
            raise CodecError(f"version number {value} is negative; Java versions are enum ordinals")
        return cls.NAMES[min(value, cls.HIGHER_VERSION)]

    @classmethod
    def value_of(cls, name: str) -> int:
        """The version number of a constant name such as ``V5_3_3``."""
        try:
            return cls.NAMES.index(name)
        except ValueError:
            raise CodecError(f"{name!r} is not a RocketMQ version name") from None

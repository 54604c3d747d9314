"""Every numeric code of the remoting protocol, in one place.

Request codes, response codes, language codes, serialize types and the version numbers Java peers put in
``RemotingCommand.version``. Values are Apache's (4.9.x plus the 5.x additions); unknown values read off the
wire are kept as pseudo-members rather than rejected, because newer peers add codes faster than we do.
"""

from __future__ import annotations

import enum
from typing import Any


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
    """The ``language`` a peer announces; JSON headers carry the name, binary headers the byte."""

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
    """Request codes (``RequestCode.java``)."""

    SEND_MESSAGE = 10
    PULL_MESSAGE = 11
    QUERY_MESSAGE = 12
    UPDATE_AND_CREATE_TOPIC = 17
    HEART_BEAT = 34
    GET_ROUTEINFO_BY_TOPIC = 105
    REGISTER_BROKER = 103
    UNREGISTER_BROKER = 104
    GET_BROKER_CLUSTER_INFO = 106
    SEND_MESSAGE_V2 = 310
    SEND_BATCH_MESSAGE = 320


class ResponseCode(_OpenIntEnum):
    """Response codes (``ResponseCode.java`` and ``RemotingSysResponseCode.java``)."""

    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    REQUEST_CODE_NOT_SUPPORTED = 3
    TOPIC_NOT_EXIST = 17

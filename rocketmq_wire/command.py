"""``RemotingCommand``: one request, response or oneway message of the RocketMQ remoting protocol.

A frame is ``length (4) | serialize type (1) + header length (3) | header | body``. The encoding is computed
from the attributes alone. Ext fields are written in the order a Java ``HashMap`` would iterate them after
the same insertions -- a typed ``custom_header`` first (in its declared field order), then ``ext_fields`` --
so a command built in Python, or rebuilt from decoded values, gives the bytes a Java peer would send.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterator, Mapping
from typing import TypeVar

from rocketmq_wire import header_binary, header_json
from rocketmq_wire.accel import Speedups
from rocketmq_wire.accel import speedups as _c
from rocketmq_wire.codes import LanguageCode, RequestCode, ResponseCode, SerializeType
from rocketmq_wire.errors import CodecError
from rocketmq_wire.header_binary import decode_binary_header, encode_binary_header
from rocketmq_wire.header_json import decode_json_header, encode_json_header
from rocketmq_wire.headers.base import CommandHeader
from rocketmq_wire.javahash import ExtFields
from rocketmq_wire.layouts import FRAME_PREFIX_FORMAT

#: What this library announces as ``version`` unless told otherwise: Apache 4.9.8 (``MQVersion`` V4_9_8).
DEFAULT_VERSION = 409

RESPONSE_FLAG = 0b01  # bit 0: this command is a response
ONEWAY_FLAG = 0b10  # bit 1: the sender expects no response

_PREFIX = struct.Struct(FRAME_PREFIX_FORMAT)
_MAX_HEADER_LENGTH = 0xFFFFFF

H = TypeVar("H", bound=CommandHeader)


@functools.cache
def _decode_context() -> tuple[object, ...]:
    """What the C decoder needs for either serialization (the order is the C side's CX_* enum)."""
    return (
        header_json._DECODE_CONTEXT,
        header_binary._decode_context(),
        SerializeType.JSON,
        SerializeType.ROCKETMQ,
    )


class RemotingCommand:
    """A remoting command. Mutable, like Java's, so handlers can fill in a response step by step."""

    __slots__ = (
        "body",
        "code",
        "custom_header",
        "ext_fields",
        "flag",
        "language",
        "opaque",
        "remark",
        "serialize_type",
        "version",
    )

    def __init__(
        self,
        code: int = 0,
        language: LanguageCode | int = LanguageCode.PYTHON,
        version: int = DEFAULT_VERSION,
        opaque: int = 0,
        flag: int = 0,
        remark: str | None = None,
        ext_fields: Mapping[str, str] | None = None,
        body: bytes | None = b"",
        serialize_type: SerializeType | int = SerializeType.JSON,
        custom_header: CommandHeader | None = None,
    ) -> None:
        self.code = int(code)
        self.language = language if type(language) is LanguageCode else LanguageCode(language)
        self.version = version
        self.opaque = opaque
        self.flag = flag
        self.remark = remark
        if ext_fields is None or isinstance(ext_fields, ExtFields):
            self.ext_fields: ExtFields | None = ext_fields
        else:
            self.ext_fields = ExtFields(ext_fields)
        self.body = bytes(body) if body else b""
        self.serialize_type = (
            serialize_type if type(serialize_type) is SerializeType else SerializeType(serialize_type)
        )
        self.custom_header = custom_header

    # -- construction helpers -------------------------------------------------------------------------

    @classmethod
    def request(
        cls,
        code: int,
        header: CommandHeader | None = None,
        body: bytes = b"",
        *,
        ext_fields: Mapping[str, str] | None = None,
        **attrs: object,
    ) -> RemotingCommand:
        """A new request; the transport assigns the opaque when it sends it."""
        cmd = cls(code=code, custom_header=header, body=body, ext_fields=ext_fields)
        for name, value in attrs.items():
            setattr(cmd, name, value)
        return cmd

    def make_response(
        self,
        code: int = ResponseCode.SUCCESS,
        remark: str | None = None,
        header: CommandHeader | None = None,
        body: bytes = b"",
    ) -> RemotingCommand:
        """A response to this request: same opaque and serialization, response flag set."""
        return RemotingCommand(
            code=code,
            opaque=self.opaque,
            flag=RESPONSE_FLAG,
            remark=remark,
            body=body,
            serialize_type=self.serialize_type,
            custom_header=header,
        )

    # -- flag bits ------------------------------------------------------------------------------------

    @property
    def is_response(self) -> bool:
        return bool(self.flag & RESPONSE_FLAG)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & ONEWAY_FLAG)

    def mark_response(self) -> None:
        self.flag |= RESPONSE_FLAG

    def mark_oneway(self) -> None:
        self.flag |= ONEWAY_FLAG

    @property
    def code_name(self) -> str:
        """The symbolic name of the code, read as a response or request code by the response bit."""
        enum_type = ResponseCode if self.is_response else RequestCode
        return enum_type(self.code).name

    # -- header fields --------------------------------------------------------------------------------

    def _uses_fast_path(self) -> bool:
        return (
            self.custom_header is not None
            and self.serialize_type == SerializeType.ROCKETMQ
            and bool(self.custom_header.FAST_FIELDS)
        )

    def _map_for_wire(self) -> ExtFields | None:
        """The ext map as Java holds it when it writes: header entries merged in unless on the fast path."""
        header = self.custom_header
        if header is None or self._uses_fast_path():
            return self.ext_fields
        capacity = self.ext_fields.capacity if self.ext_fields is not None else None
        merged = ExtFields(header.ext_items(), capacity=capacity)
        if self.ext_fields:
            merged.update(self.ext_fields)
        if not merged and self.ext_fields is None:
            return None
        return merged

    def fields(self) -> dict[str, str]:
        """Every ext entry the receiver sees, as Java's decoded ext map: header entries, then ext fields."""
        result: dict[str, str] = (
            dict(self.custom_header.ext_items()) if self.custom_header is not None else {}
        )
        if self.ext_fields:
            result.update(self.ext_fields)
        return result

    def read_header(self, header_cls: type[H]) -> H:
        """Decode a typed header from the entries; raises :class:`CodecError` if a required one is missing."""
        return header_cls.from_ext(self.fields())

    # -- encoding -------------------------------------------------------------------------------------

    def _wire_entries(self) -> Iterator[tuple[str, str]]:
        if self._uses_fast_path():
            assert self.custom_header is not None
            yield from self.custom_header.fast_items()
        ext = self._map_for_wire()
        if ext:
            yield from ext.items_java_order()

    def encode_header(self) -> bytes:
        if _c is not None:
            encoded = self._encode_header_c(_c)
            if encoded is not None:
                return encoded
        if self.serialize_type == SerializeType.ROCKETMQ:
            return encode_binary_header(
                self.code,
                self.language,
                self.version,
                self.opaque,
                self.flag,
                self.remark,
                self._wire_entries(),
            )
        if self.serialize_type != SerializeType.JSON:
            raise CodecError(f"cannot encode with serialize type {self.serialize_type!r}")
        ext = self._map_for_wire()
        return encode_json_header(
            self.code,
            self.language,
            self.version,
            self.opaque,
            self.flag,
            self.remark,
            None if ext is None else ext.items_java_order(),
        )

    def _encode_header_c(self, c: Speedups) -> bytes | None:
        """``encode_header`` in one C call; ``None`` when C declines (then the code above runs)."""
        header = self.custom_header
        plan = None
        fast = False
        if header is not None:
            plans = header._plans_for_c()
            if plans is None:
                return None
            fast = self._uses_fast_path()
            plan = plans[1] if fast else plans[0]
        try:
            return c.encode_header(
                self.serialize_type,
                self.code,
                self.language,
                self.version,
                self.opaque,
                self.flag,
                self.remark,
                header,
                plan,
                fast,
                self.ext_fields,
            )
        except c.WireError as exc:
            raise CodecError(str(exc)) from None

    def encode(self) -> bytes:
        """One whole frame, including the 4-byte length prefix."""
        if _c is not None:
            try:
                frame = _c.encode_command(self)
            except _c.WireError as exc:
                raise CodecError(str(exc)) from None
            if frame is not None:
                return frame
        header = self.encode_header()
        if len(header) > _MAX_HEADER_LENGTH:
            raise CodecError(f"header of {len(header)} bytes exceeds the 24-bit header length field")
        body = self.body
        return b"".join(
            (
                _PREFIX.pack(4 + len(header) + len(body), (int(self.serialize_type) << 24) | len(header)),
                header,
                body,
            )
        )

    # -- decoding -------------------------------------------------------------------------------------

    @classmethod
    def decode(cls, frame: bytes | bytearray | memoryview) -> RemotingCommand:
        """Decode one whole frame (length prefix included); malformed input raises :class:`CodecError`."""
        if type(frame) is not bytes:
            frame = bytes(frame)
        if _c is not None:
            try:
                decoded = _c.decode_command(cls, frame, _decode_context())
            except _c.WireError as exc:
                raise CodecError(str(exc)) from None
            if decoded is not None:
                return decoded
        size = len(frame)
        if size < 8:
            raise CodecError(f"frame of {size} bytes is shorter than the 8-byte minimum")
        length, header_word = _PREFIX.unpack_from(frame, 0)
        if length != size - 4:
            raise CodecError(f"length prefix says {length} bytes follow, but the frame holds {size - 4}")
        header_end = 8 + (header_word & 0xFFFFFF)
        if header_end > size:
            raise CodecError(f"header length {header_end - 8} runs past the frame of {size} bytes")
        type_byte = header_word >> 24
        if type_byte == 0:
            fields = decode_json_header(frame[8:header_end])
            serialize_type = SerializeType.JSON
        elif type_byte == 1:
            fields = decode_binary_header(frame[8:header_end])
            serialize_type = SerializeType.ROCKETMQ
        else:
            raise CodecError(f"unknown serialize type {type_byte} in the header length word")
        cmd = cls.__new__(cls)
        (
            cmd.code,
            cmd.language,
            cmd.version,
            cmd.opaque,
            cmd.flag,
            cmd.remark,
            cmd.ext_fields,
            cmd.custom_header,
        ) = fields
        cmd.body = frame[header_end:]
        cmd.serialize_type = serialize_type
        return cmd

    # -- misc -----------------------------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RemotingCommand):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        kind = "response" if self.is_response else ("oneway" if self.is_oneway else "request")
        ext = dict(self.ext_fields) if self.ext_fields is not None else None
        return (
            f"RemotingCommand({kind} code={self.code}({self.code_name}) opaque={self.opaque} "
            f"lang={self.language.name} v={self.version} ser={self.serialize_type.name} "
            f"remark={self.remark!r} header={self.custom_header!r} ext={ext} body={len(self.body)}B)"
        )

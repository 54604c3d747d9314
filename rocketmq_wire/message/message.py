"""A message as a producer builds it, and the property rules a Java producer follows.

Java keeps tags, keys, the wait flag and the delay level as properties; :meth:`Message.build_properties`
lays them out in the order a Java producer inserts them (tags, keys, wait flag, then user properties, then the
delay level, then whatever the sending code adds such as the unique id), which is what decides the order of
names sharing a hash bucket when the map is written out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from rocketmq_wire.errors import CodecError
from rocketmq_wire.message import const
from rocketmq_wire.message.batch import BatchEntry
from rocketmq_wire.message.properties import (
    PropertiesFlavour,
    decode_properties,
    encode_java_properties,
    validate_user_property,
)


def join_keys(keys: Iterable[str]) -> str:
    """The ``KEYS`` value: keys separated by one space (Java appends a space to each, then trims)."""
    return const.KEY_SEPARATOR.join(keys).strip()


@dataclasses.dataclass
class Message:
    """What a producer sends; ``properties`` are user properties only (system names are refused)."""

    topic: str
    body: bytes = b""
    tags: str | None = None
    keys: list[str] = dataclasses.field(default_factory=list)
    properties: dict[str, str] = dataclasses.field(default_factory=dict)
    delay_level: int = 0
    wait_store_msg_ok: bool = True
    flag: int = 0

    def __post_init__(self) -> None:
        # Java's setKeys(String) and a str body are common: take them whole instead of per character.
        raw_keys: object = self.keys
        if isinstance(raw_keys, str):
            self.keys = [key for key in raw_keys.split(const.KEY_SEPARATOR) if key]
        raw_body: object = self.body
        if isinstance(raw_body, str):
            self.body = raw_body.encode("utf-8")
        for name, value in self.properties.items():
            validate_user_property(name, value)
        for key in self.keys:
            if not key or const.KEY_SEPARATOR in key:
                raise CodecError(f"message key {key!r} is empty or contains a space, the key separator")
        if self.delay_level < 0:
            raise CodecError(f"delay level must not be negative, got {self.delay_level}")

    def put_user_property(self, name: str, value: str) -> None:
        validate_user_property(name, value)
        self.properties[name] = value

    def build_properties(self, extra: Mapping[str, str] | Iterable[tuple[str, str]] = ()) -> dict[str, str]:
        """Every property of the message in Java insertion order, ``extra`` (system properties the sending
        code adds: ``TRAN_MSG``, ``PGROUP``, ``UNIQ_KEY`` …) last."""
        result: dict[str, str] = {}
        if self.tags:
            result[const.TAGS] = self.tags
        if self.keys:
            result[const.KEYS] = join_keys(self.keys)
        result[const.WAIT] = "true" if self.wait_store_msg_ok else "false"
        result.update(self.properties)
        if self.delay_level > 0:
            result[const.DELAY] = str(self.delay_level)
        result.update(extra.items() if isinstance(extra, Mapping) else extra)
        return result

    def encode_properties(
        self,
        flavour: PropertiesFlavour,
        extra: Mapping[str, str] | Iterable[tuple[str, str]] = (),
    ) -> str:
        """The properties string a Java producer of that flavour sends for this message."""
        return encode_java_properties(self.build_properties(extra), flavour)

    def to_batch_entry(
        self, flavour: PropertiesFlavour, extra: Mapping[str, str] | Iterable[tuple[str, str]] = ()
    ) -> BatchEntry:
        return BatchEntry(self.body, self.encode_properties(flavour, extra), self.flag)

    @classmethod
    def from_properties(
        cls, topic: str, body: bytes, properties: Mapping[str, str] | str, flag: int = 0
    ) -> tuple[Message, dict[str, str]]:
        """Split a full property map (or string) into a message and the properties it cannot hold.

        The inverse of :meth:`build_properties`, for code that receives a message (a broker re-sending it,
        a tool copying it): ``TAGS``, ``KEYS``, ``WAIT`` and ``DELAY`` become fields; other system names, and
        names a Java producer would refuse as user properties, are returned beside the message.
        """
        props = decode_properties(properties) if isinstance(properties, str) else dict(properties)
        tags = props.pop(const.TAGS, None)
        keys = [key for key in props.pop(const.KEYS, "").split(const.KEY_SEPARATOR) if key]
        wait = props.pop(const.WAIT, "true") != "false"
        delay_text = props.pop(const.DELAY, "0")
        delay = int(delay_text) if delay_text.isascii() and delay_text.isdigit() else 0
        user: dict[str, str] = {}
        other: dict[str, str] = {}
        for name, value in props.items():
            try:
                validate_user_property(name, value)
            except CodecError:
                other[name] = value
            else:
                user[name] = value
        return cls(topic, body, tags, keys, user, delay, wait, flag), other

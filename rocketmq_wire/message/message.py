"""A message as a producer builds it, and the property rules a Java producer follows.

Java keeps tags, keys, the wait flag, the delay level and a 5.x delivery time as properties;
:meth:`Message.build_properties` lays them out in the order a Java producer inserts them (tags, keys, wait
flag, then user properties, then the delay level or delivery time, then whatever the sending code adds such as
the unique id), which is what decides the order of names sharing a hash bucket when the map is written out.

A *timer message* (RocketMQ 5) carries one of three properties, each written as Java's setter writes it:
``TIMER_DELIVER_MS`` (``setDeliverTimeMs``, an absolute epoch time), ``TIMER_DELAY_MS`` (``setDelayTimeMs``)
or ``TIMER_DELAY_SEC`` (``setDelayTimeSec``), the delays counted by the broker from when it stores the send.
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
    deliver_time_ms: int | None = None
    delay_time_ms: int | None = None
    delay_time_sec: int | None = None

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
        timer = self.timer_property()
        if timer is not None and self.delay_level > 0:
            # Apache's broker drops the delivery time of a message that also has a delay level.
            raise CodecError("a message takes a delay level or a delivery time, not both")

    def timer_property(self) -> tuple[str, str] | None:
        """The one timer property this message carries (name, value), or None for an ordinary message."""
        chosen = [
            (name, value)
            for name, value in (
                (const.TIMER_DELIVER_MS, self.deliver_time_ms),
                (const.TIMER_DELAY_MS, self.delay_time_ms),
                (const.TIMER_DELAY_SEC, self.delay_time_sec),
            )
            if value is not None
        ]
        if not chosen:
            return None
        if len(chosen) > 1:
            # The broker would silently prefer one (seconds, then milliseconds, then the absolute time).
            raise CodecError(f"a message takes one delivery time, got {', '.join(n for n, _ in chosen)}")
        [(name, value)] = chosen
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
            raise CodecError(f"{name} must be a whole number from 0 to 2^63-1 (a Java long), got {value!r}")
        return name, str(value)

    @property
    def is_timer(self) -> bool:
        """Whether the message asks the broker to hold it until a delivery time (RocketMQ 5)."""
        return self.timer_property() is not None

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
        timer = self.timer_property()
        if timer is not None:
            result[timer[0]] = timer[1]
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
        a tool copying it): ``TAGS``, ``KEYS``, ``WAIT``, ``DELAY`` and the first timer property (in the
        broker's order of preference) become fields; other system names, and names a Java producer would
        refuse as user properties, are returned beside the message.
        """
        props = decode_properties(properties) if isinstance(properties, str) else dict(properties)
        tags = props.pop(const.TAGS, None)
        keys = [key for key in props.pop(const.KEYS, "").split(const.KEY_SEPARATOR) if key]
        wait = props.pop(const.WAIT, "true") != "false"
        delay_text = props.pop(const.DELAY, "0")
        delay = int(delay_text) if delay_text.isascii() and delay_text.isdigit() else 0
        timer: dict[str, int] = {}
        if delay == 0:
            for name, field in _TIMER_FIELDS:
                text = props.get(name, "")
                if text.isascii() and text.isdigit() and int(text) < 2**63:
                    timer[field] = int(props.pop(name))
                    break
        user: dict[str, str] = {}
        other: dict[str, str] = {}
        for name, value in props.items():
            try:
                validate_user_property(name, value)
            except CodecError:
                other[name] = value
            else:
                user[name] = value
        return cls(topic, body, tags, keys, user, delay, wait, flag, **timer), other


#: Timer properties and the fields holding them, in the order Apache's broker prefers them.
_TIMER_FIELDS = (
    (const.TIMER_DELAY_SEC, "delay_time_sec"),
    (const.TIMER_DELAY_MS, "delay_time_ms"),
    (const.TIMER_DELIVER_MS, "deliver_time_ms"),
)

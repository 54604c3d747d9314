"""The matrix's axes, and the cells a client cannot be asked for (with the reason, shown in the report)."""

from __future__ import annotations

from rocketmq_wire.codes import SerializeType

CLIENTS = ("project", "rmq", "java", "cpp", "go", "mqadmin")
OPERATIONS = ("send", "route", "clusters", "consume")
SERIALIZATIONS = (SerializeType.JSON, SerializeType.ROCKETMQ)


def not_applicable(client: str, operation: str, serialize: SerializeType) -> str | None:
    """Why ``client`` has no such cell, or None when the cell runs."""
    if client == "cpp":
        if operation in ("route", "clusters"):
            return "the C++ client (PyPI rocketmq 0.4.4) has no route or cluster API"
        if serialize is not SerializeType.JSON:
            return "the C++ client (PyPI rocketmq 0.4.4) writes JSON headers only"
    if client == "go":
        if operation == "clusters":
            return "the Go client has no cluster-info API"
    if client == "mqadmin" and operation == "consume":
        return "mqadmin consumes through rmq's column (consumeMessage prints no parseable record)"
    return None


def cells() -> list[tuple[str, str, SerializeType]]:
    return [
        (client, operation, serialize)
        for client in CLIENTS
        for operation in OPERATIONS
        for serialize in SERIALIZATIONS
        if not_applicable(client, operation, serialize) is None
    ]


def cell_id(client: str, operation: str, serialize: SerializeType) -> str:
    return f"{client}-{operation}-{serialize.name}"

"""Namespaced key/value settings kept by the NameServer (Apache's ``KVConfigManager``).

The main user is the ``ORDER_TOPIC_CONFIG`` namespace: ``mqadmin updateKvConfig`` stores an ordered
topic's queue layout there, the NameServer hands it to brokers when they register and (when ordered
messages are enabled) to clients in the topic's route. With a path the table survives restarts in the
same ``kvConfig.json`` layout Apache writes, so either server can read the other's file.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from rocketmq_wire import fastjson
from rocketmq_wire.bodies.base import same, write_map
from rocketmq_wire.bodies.java_collections import HASH_MAP, JavaMap, string_hash
from rocketmq_wire.bodies.kv import KVTable
from rocketmq_wire.errors import CodecError
from rocketmq_wire.topics import ORDER_TOPIC_CONFIG

logger = logging.getLogger("nameserver.kvconfig")

#: ``NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG``.
NAMESPACE_ORDER_TOPIC_CONFIG = ORDER_TOPIC_CONFIG


class KVConfigManager:
    """``namespace -> key -> value``; every change is written through to ``path`` when one is given.

    Each namespace is a Java ``HashMap`` in Apache, so a namespace remembers the largest table it has
    grown to: that, not its current size, fixes the order its entries are listed in.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = None if path is None else Path(path)
        self._table: dict[str, JavaMap[str, str]] = {}
        #: Bumped on every change, so callers can cache what they derive from the table.
        self.generation = 0

    # -- queries ---------------------------------------------------------------------------------------

    def get(self, namespace: str, key: str) -> str | None:
        table = self._table.get(namespace)
        return None if table is None else table.get(key)

    def namespace(self, namespace: str) -> dict[str, str] | None:
        """A copy of one namespace; ``None`` when it was never written (not the same as empty)."""
        table = self._table.get(namespace)
        return None if table is None else dict(table)

    def kv_table(self, namespace: str) -> KVTable | None:
        """The namespace as the body Apache sends; ``None`` when the namespace does not exist."""
        table = self._table.get(namespace)
        if table is None:
            return None
        return KVTable(table=JavaMap(table, table_size=table.table_size))

    def namespaces(self) -> list[str]:
        return list(self._table)

    # -- changes ---------------------------------------------------------------------------------------

    def put(self, namespace: str, key: str, value: str) -> None:
        table = self._table.get(namespace)
        if table is None:
            table = self._table[namespace] = JavaMap(table_size=HASH_MAP.size_for(0))
            logger.info("putKVConfig create new namespace %s", namespace)
        previous = table.get(key)
        table[key] = value
        self.generation += 1
        table.table_size = max(table.table_size or 0, HASH_MAP.size_for(len(table)))
        if previous is None:
            logger.info(
                "putKVConfig create new config item, namespace %s key %s value %s", namespace, key, value
            )
        else:
            logger.info("putKVConfig update config item, namespace %s key %s value %s", namespace, key, value)
        self.persist()

    def delete(self, namespace: str, key: str) -> None:
        table = self._table.get(namespace)
        if table is not None:
            value = table.pop(key, None)
            self.generation += 1
            logger.info(
                "deleteKVConfig delete a config item, namespace %s key %s value %s", namespace, key, value
            )
        self.persist()

    # -- the file --------------------------------------------------------------------------------------

    def to_json(self) -> bytes:
        """The file content: Apache's ``KVConfigSerializeWrapper`` (``{"configTable":{ns:{k:v}}}``)."""
        tables = write_map(
            self._table,
            string_hash,
            HASH_MAP,
            same,
            lambda t: write_map(t, string_hash, HASH_MAP, same, same),
        )
        return fastjson.dump_bytes(fastjson.Bean({"configTable": tables}))

    def load(self) -> None:
        """Read ``path`` if it exists, merging its namespaces over what is held; a bad file raises
        :class:`CodecError` rather than being silently overwritten by the next change."""
        if self.path is None or not self.path.is_file():
            return
        parsed = fastjson.loads(self.path.read_bytes())
        tables = parsed.get("configTable") if isinstance(parsed, dict) else None
        if tables is None:
            return
        if not isinstance(tables, dict):
            raise CodecError(f"{self.path}: configTable is not a JSON object")
        for namespace, entries in tables.items():
            if not isinstance(namespace, str) or not isinstance(entries, dict):
                raise CodecError(f"{self.path}: namespace {namespace!r} is not an object of strings")
            table = self._table.setdefault(namespace, JavaMap(table_size=HASH_MAP.size_for(0)))
            for key, value in entries.items():
                if not isinstance(key, str) or not isinstance(value, str):
                    raise CodecError(f"{self.path}: {namespace}.{key!r} is not a string entry")
                table[key] = value
            table.table_size = max(table.table_size or 0, HASH_MAP.size_for(len(table)))
        self.generation += 1
        logger.info("loaded KV config from %s: %d namespaces", self.path, len(self._table))

    def persist(self) -> None:
        """Write the whole table the way Apache's ``string2File`` does: a temporary file renamed over the
        old one, the old content kept as ``.bak``. Write errors are logged, not raised: the change itself
        has been made and the requester is told so, as in Apache."""
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(self.path.name + ".tmp")
            tmp.write_bytes(self.to_json())
            if self.path.is_file():
                shutil.copyfile(self.path, self.path.with_name(self.path.name + ".bak"))
            os.replace(tmp, self.path)
        except OSError:
            logger.exception("persist KV config to %s failed", self.path)

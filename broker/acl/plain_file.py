"""Reading and writing ``plain_acl.yml`` in Apache's format.

The file holds ``globalWhiteRemoteAddresses`` (a list of address patterns), ``accounts`` (each with
``accessKey``, ``secretKey``, ``whiteRemoteAddress``, ``admin``, ``defaultTopicPerm``, ``defaultGroupPerm``,
``topicPerms``, ``groupPerms``) and, once an admin request has changed it, ``dataVersion`` (a one-element
list of ``counter`` and ``timestamp``). YAML scalars are taken as Java's mapper takes them: a numeric secret
(``secretKey: 12345678``) is the string ``"12345678"``.

Admin requests rewrite the file as Apache does: the whole document is read back, the one part changed, the
version bumped, and the document dumped again, so keys this module does not know survive a rewrite.
Loading is strict where Apache would fail too (a key shorter than 7 characters, a ``Res=Perm`` entry that
is not one, a pattern that does not parse) and says which file and which account is at fault.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import stat
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from broker.acl.errors import AclError
from rocketmq_wire.bodies.topic_config import DataVersion

log = logging.getLogger("broker.acl")

GLOBAL_WHITE = "globalWhiteRemoteAddresses"
ACCOUNTS = "accounts"
ACCESS_KEY = "accessKey"
SECRET_KEY = "secretKey"
WHITE_ADDRESS = "whiteRemoteAddress"
ADMIN = "admin"
DEFAULT_TOPIC_PERM = "defaultTopicPerm"
DEFAULT_GROUP_PERM = "defaultGroupPerm"
TOPIC_PERMS = "topicPerms"
GROUP_PERMS = "groupPerms"
DATA_VERSION = "dataVersion"

#: Keys and secrets must be longer than this (Apache's ``ACCESS_KEY_MIN_LENGTH`` / ``SECRET_KEY_MIN_LENGTH``).
KEY_MIN_LENGTH = 6


@dataclasses.dataclass(slots=True)
class AccountConfig:
    """One account as the file (and the admin requests) spell it: Apache's ``PlainAccessConfig``."""

    access_key: str | None = None
    secret_key: str | None = None
    white_remote_address: str | None = None
    admin: bool = False
    default_topic_perm: str | None = None
    default_group_perm: str | None = None
    topic_perms: list[str] | None = None
    group_perms: list[str] | None = None

    def check_keys(self) -> None:
        """Refuse an account whose key or secret is missing or too short (Apache's words)."""
        if (
            self.access_key is None
            or self.secret_key is None
            or len(self.access_key) <= KEY_MIN_LENGTH
            or len(self.secret_key) <= KEY_MIN_LENGTH
        ):
            raise AclError(
                f"The accessKey={_java(self.access_key)} and secretKey={_java(self.secret_key)} "
                "cannot be null and length should longer than 6",
                "org.apache.rocketmq.acl.plain.PlainPermissionManager.checkPlainAccessConfig"
                "(PlainPermissionManager.java:627)",
            )


def next_version(version: DataVersion) -> DataVersion:
    """The version a rewrite gets: the counter plus one, stamped now (Java's ``DataVersion.nextVersion``)."""
    return DataVersion(timestamp=int(time.time() * 1000), counter=version.counter + 1)


@dataclasses.dataclass(slots=True)
class PlainAclFile:
    """A parsed ``plain_acl.yml``: the typed view and the raw document it came from (for rewriting)."""

    global_white_addresses: list[str] = dataclasses.field(default_factory=list)
    accounts: list[AccountConfig] = dataclasses.field(default_factory=list)
    version: DataVersion = dataclasses.field(default_factory=DataVersion)
    document: dict[str, Any] = dataclasses.field(default_factory=dict)


def _java(value: object) -> str:
    return "null" if value is None else str(value)


def _text(value: object, where: str) -> str | None:
    """A YAML scalar as the Java string field it fills (numbers and booleans as Java prints them)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise AclError(f"{where}: expected a single value, got {type(value).__name__}")


def _texts(value: object, where: str) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise AclError(f"{where}: expected a list, got {type(value).__name__}")
    result = []
    for index, item in enumerate(value):
        text = _text(item, f"{where}[{index}]")
        if text is not None:
            result.append(text)
    return result


def _flag(value: object, where: str) -> bool:
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise AclError(f"{where}: expected true or false, got {value!r}")


def _account(raw: object, where: str) -> AccountConfig:
    if not isinstance(raw, dict):
        raise AclError(f"{where}: an account must be a mapping of accessKey, secretKey, ...")
    return AccountConfig(
        access_key=_text(raw.get(ACCESS_KEY), f"{where}.{ACCESS_KEY}"),
        secret_key=_text(raw.get(SECRET_KEY), f"{where}.{SECRET_KEY}"),
        white_remote_address=_text(raw.get(WHITE_ADDRESS), f"{where}.{WHITE_ADDRESS}"),
        admin=_flag(raw.get(ADMIN), f"{where}.{ADMIN}"),
        default_topic_perm=_text(raw.get(DEFAULT_TOPIC_PERM), f"{where}.{DEFAULT_TOPIC_PERM}"),
        default_group_perm=_text(raw.get(DEFAULT_GROUP_PERM), f"{where}.{DEFAULT_GROUP_PERM}"),
        topic_perms=_texts(raw.get(TOPIC_PERMS), f"{where}.{TOPIC_PERMS}"),
        group_perms=_texts(raw.get(GROUP_PERMS), f"{where}.{GROUP_PERMS}"),
    )


def _version(raw: object, where: str) -> DataVersion:
    if raw is None:
        return DataVersion()
    if not isinstance(raw, list):
        raise AclError(f"{where}: expected a list with one counter/timestamp entry")
    if not raw:
        return DataVersion()
    first = raw[0]
    if not isinstance(first, dict):
        raise AclError(f"{where}[0]: expected counter and timestamp")
    try:
        counter = int(first.get("counter", 0))
        timestamp = int(first.get("timestamp", int(time.time() * 1000)))
    except (TypeError, ValueError):
        raise AclError(f"{where}[0]: counter and timestamp must be numbers") from None
    return DataVersion(timestamp=timestamp, counter=counter)


def parse_document(document: object, source: str) -> PlainAclFile:
    """The typed view of a loaded YAML document; ``source`` names it in errors."""
    if document is None:
        return PlainAclFile()
    if not isinstance(document, dict):
        raise AclError(f"{source}: expected a mapping with {GLOBAL_WHITE} and {ACCOUNTS}")
    white = _texts(document.get(GLOBAL_WHITE), f"{source}: {GLOBAL_WHITE}") or []
    raw_accounts = document.get(ACCOUNTS)
    if raw_accounts is not None and not isinstance(raw_accounts, list):
        raise AclError(f"{source}: {ACCOUNTS} must be a list of accounts")
    accounts = [
        _account(raw, f"{source}: {ACCOUNTS}[{index}]") for index, raw in enumerate(raw_accounts or [])
    ]
    version = _version(document.get(DATA_VERSION), f"{source}: {DATA_VERSION}")
    return PlainAclFile(white, accounts, version, dict(document))


def parse_text(text: str, source: str = "<text>") -> PlainAclFile:
    """Parse the YAML text of an ACL file; malformed YAML raises :class:`AclError` saying where."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise AclError(f"{source}: not valid YAML: {exc}") from None
    return parse_document(document, source)


def read_file(path: Path) -> PlainAclFile:
    """Load ``path``; a file that does not exist reads as empty (Apache creates it empty)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return PlainAclFile()
    except OSError as exc:
        raise AclError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    return parse_bytes(data, str(path))


def parse_bytes(data: bytes, source: str) -> PlainAclFile:
    """Parse the bytes of an ACL file (UTF-8 YAML); ``source`` names it in errors."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AclError(f"{source}: not UTF-8 text (byte {exc.start})") from None
    return parse_text(text, source)


def account_document(account: AccountConfig, existing: dict[str, Any] | None = None) -> dict[str, Any]:
    """The YAML mapping of an account after an update: what the update sets replaces what was there, what
    it leaves unset stays (a missing secret or permission keeps the old one, as Apache's update does)."""
    entry: dict[str, Any] = dict(existing or {})
    if not account.access_key or len(account.access_key) <= KEY_MIN_LENGTH:
        raise AclError(
            f"The accessKey={_java(account.access_key)} cannot be null and length should longer than 6"
        )
    entry[ACCESS_KEY] = account.access_key
    if account.secret_key:
        if len(account.secret_key) <= KEY_MIN_LENGTH:
            raise AclError(f"The secretKey={account.secret_key} value length should longer than 6")
        entry[SECRET_KEY] = account.secret_key
    if account.white_remote_address is not None:
        entry[WHITE_ADDRESS] = account.white_remote_address
    entry[ADMIN] = account.admin
    if account.default_topic_perm:
        entry[DEFAULT_TOPIC_PERM] = account.default_topic_perm
    if account.default_group_perm:
        entry[DEFAULT_GROUP_PERM] = account.default_group_perm
    if account.topic_perms is not None:
        entry[TOPIC_PERMS] = list(account.topic_perms)
    if account.group_perms is not None:
        entry[GROUP_PERMS] = list(account.group_perms)
    return entry


def write_document(path: Path, document: dict[str, Any], version: DataVersion) -> None:
    """Write ``document`` with ``version`` as its ``dataVersion``, replacing the file in one step (a
    reader -- the broker's own reload, an operator's editor -- never sees half a file)."""
    document = dict(document)
    document[DATA_VERSION] = [{"counter": version.counter, "timestamp": version.timestamp}]
    text = yaml.safe_dump(document, default_flow_style=False, sort_keys=False, allow_unicode=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        with contextlib.suppress(FileNotFoundError):
            os.chmod(temporary, stat.S_IMODE(path.stat().st_mode))  # keep the operator's mode
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    log.info("ACL file %s written (dataVersion counter %d)", path, version.counter)

"""The broker's ACL state: one ``plain_acl.yml``, its compiled rules, its version, and the changes admin
requests make to it (Apache's ``PlainPermissionManager``, for the one file a broker here reads).

The rules are swapped whole on every (re)load, so a check running alongside a reload sees the old rules or
the new ones, never a mix. A file that stops parsing leaves the last good rules in force and says so in
the log: an operator's half-saved edit must not open (or close) the broker.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from collections.abc import Sequence
from pathlib import Path

from broker.acl.errors import AclError
from broker.acl.permission import check_resource_perms
from broker.acl.plain_file import (
    ACCESS_KEY,
    ACCOUNTS,
    GLOBAL_WHITE,
    AccountConfig,
    PlainAclFile,
    account_document,
    next_version,
    parse_bytes,
    parse_document,
    read_file,
    write_document,
)
from broker.acl.rules import AclRules
from rocketmq_wire.bodies.topic_config import DataVersion
from rocketmq_wire.command import RemotingCommand

log = logging.getLogger("broker.acl")


@dataclasses.dataclass(frozen=True, slots=True)
class _Stamp:
    """What tells a changed file from an unchanged one without reading it."""

    mtime_ns: int
    size: int
    inode: int

    @classmethod
    def of(cls, path: Path) -> _Stamp | None:
        try:
            info = path.stat()
        except FileNotFoundError:
            return None
        return cls(info.st_mtime_ns, info.st_size, info.st_ino)


class PlainAclManager:
    """Loads, checks against, reloads and rewrites one ACL file."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path).absolute()
        self._rules = AclRules()
        self._parsed = PlainAclFile()
        self._stamp: _Stamp | None = None
        self._digest = b""

    # -- loading ----------------------------------------------------------------------------------------

    def load(self) -> None:
        """Read the file and compile it; any fault raises :class:`AclError` (used at start-up, where a
        broker must not run with rules it could not read). A missing file is created empty, as Apache does,
        which refuses every request until accounts or white addresses are added."""
        if not self.path.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.touch()
            log.warning("ACL file %s did not exist: created it empty (every request is refused)", self.path)
        stamp = _Stamp.of(self.path)
        try:
            data = self.path.read_bytes()
        except OSError as exc:
            raise AclError(f"{self.path}: cannot be read: {exc.strerror or exc}") from None
        parsed = parse_bytes(data, str(self.path))
        rules = AclRules.compile(parsed)
        self._rules, self._parsed, self._stamp = rules, parsed, stamp
        self._digest = hashlib.sha256(data).digest()
        log.info(
            "ACL rules loaded from %s: %d accounts, %d global white addresses",
            self.path,
            len(rules.accounts),
            len(rules.global_white),
        )

    def reload_if_changed(self) -> bool:
        """Reload when the file changed since it was last read; True when new rules took effect.

        A file that no longer parses keeps the old rules (logged as an error) and is tried again on the next
        change. A deleted file also keeps them: Apache's watcher ignores a vanished file too.
        """
        stamp = _Stamp.of(self.path)
        if stamp is None or stamp == self._stamp:
            return False
        try:
            data = self.path.read_bytes()
        except OSError as exc:
            log.error("ACL file %s changed but cannot be read: %s; the previous rules stay", self.path, exc)
            return False
        digest = hashlib.sha256(data).digest()
        self._stamp = stamp
        if digest == self._digest:
            return False
        self._digest = digest
        try:
            parsed = parse_bytes(data, str(self.path))
            rules = AclRules.compile(parsed)
        except AclError as exc:
            log.error("ACL file %s changed but is not valid: %s; the previous rules stay", self.path, exc)
            return False
        self._rules, self._parsed = rules, parsed
        log.info("ACL file %s changed: %d accounts now", self.path, len(rules.accounts))
        return True

    # -- checking ---------------------------------------------------------------------------------------

    @property
    def rules(self) -> AclRules:
        return self._rules

    def check(self, request: RemotingCommand, remote_address: str) -> None:
        """Raise :class:`AclError` unless the current rules let ``request`` through."""
        self._rules.check(request, remote_address)

    # -- what admin requests read -----------------------------------------------------------------------

    @property
    def version(self) -> DataVersion:
        return self._parsed.version

    @property
    def global_white_addresses(self) -> list[str]:
        return list(self._parsed.global_white_addresses)

    @property
    def accounts(self) -> list[AccountConfig]:
        """The accounts as the file spells them (first definition of a key only, as Apache lists them)."""
        seen: set[str | None] = set()
        result = []
        for account in self._parsed.accounts:
            if account.access_key not in seen:
                seen.add(account.access_key)
                result.append(dataclasses.replace(account))
        return result

    # -- what admin requests change ---------------------------------------------------------------------

    def _commit(self, document: dict[str, object]) -> None:
        """Write ``document`` with the next version, then make it the rules in force."""
        write_document(self.path, document, next_version(self._parsed.version))
        self.load()

    def _current_document(self) -> dict[str, object]:
        """The file as it is on disk now (not as last loaded: an operator may have edited it since)."""
        return dict(read_file(self.path).document)

    def update_account(self, account: AccountConfig) -> None:
        """Create the account, or update the one with its access key (it moves to the end of the list, as
        Apache's update does); a malformed account raises :class:`AclError` and nothing is written."""
        account.check_keys()
        check_resource_perms(account.topic_perms)
        check_resource_perms(account.group_perms)
        document = self._current_document()
        raw_accounts = document.get(ACCOUNTS)
        entries = list(raw_accounts) if isinstance(raw_accounts, list) else []
        existing = None
        for index, entry in enumerate(entries):
            if isinstance(entry, dict) and str(entry.get(ACCESS_KEY)) == account.access_key:
                existing = entries.pop(index)
                break
        entries.append(account_document(account, existing))
        document[ACCOUNTS] = entries
        AclRules.compile(_parsed_of(document, self.path))  # refuse what would not load, before writing
        self._commit(document)
        log.info("ACL account %s %s", account.access_key, "updated" if existing is not None else "created")

    def delete_account(self, access_key: str | None) -> bool:
        """Remove the account; False when there is none with that key (nothing is written then)."""
        if not access_key:
            log.error("deleting an ACL account needs an access key")
            return False
        if access_key not in self._rules.accounts:
            return False
        document = self._current_document()
        raw_accounts = document.get(ACCOUNTS)
        entries = list(raw_accounts) if isinstance(raw_accounts, list) else []
        kept = [e for e in entries if not (isinstance(e, dict) and str(e.get(ACCESS_KEY)) == access_key)]
        if len(kept) == len(entries):
            return False
        document[ACCOUNTS] = kept
        self._commit(document)
        log.info("ACL account %s deleted", access_key)
        return True

    def update_global_white(self, addresses: Sequence[str], file_path: str | None = None) -> bool:
        """Replace the global white list; False when ``file_path`` names a file other than this broker's
        (Apache refuses files outside its home the same way)."""
        if file_path and Path(file_path).absolute() != self.path:
            log.error(
                "global white list update for %s refused: this broker's ACL file is %s", file_path, self.path
            )
            return False
        document = self._current_document()
        document[GLOBAL_WHITE] = list(addresses)
        AclRules.compile(_parsed_of(document, self.path))
        self._commit(document)
        log.info("ACL global white list now %s", ", ".join(addresses) or "empty")
        return True


def _parsed_of(document: dict[str, object], path: Path) -> PlainAclFile:
    return parse_document(document, str(path))

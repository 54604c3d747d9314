"""The ACL file manager alone: rewrites keep what they do not change, versions count, reloads are safe."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import yaml

from broker.acl import AccountConfig, AclError, PlainAclManager

FILE = """\
# an operator's comment
someFutureKey: kept
globalWhiteRemoteAddresses: [10.10.103.*]
accounts:
  - accessKey: firstKey1
    secretKey: firstSecret
    defaultTopicPerm: PUB
    topicPerms: [a=SUB]
  - accessKey: secondKey
    secretKey: secondSecret
"""


@pytest.fixture
def manager(tmp_path: Path) -> PlainAclManager:
    path = tmp_path / "plain_acl.yml"
    path.write_text(FILE)
    os.chmod(path, 0o640)
    loaded = PlainAclManager(path)
    loaded.load()
    return loaded


def document(manager: PlainAclManager) -> dict[str, object]:
    loaded = yaml.safe_load(manager.path.read_text())
    assert isinstance(loaded, dict)
    return loaded


def test_update_merges_moves_to_the_end_and_keeps_the_rest(manager: PlainAclManager) -> None:
    manager.update_account(
        AccountConfig(access_key="firstKey1", secret_key="firstSecret", default_group_perm="SUB")
    )
    written = document(manager)
    assert written["someFutureKey"] == "kept"
    accounts = written["accounts"]
    assert isinstance(accounts, list)
    assert [a["accessKey"] for a in accounts] == ["secondKey", "firstKey1"]
    first = accounts[1]
    # unset fields of the update keep the file's values; admin is always written (a Java boolean)
    assert first["defaultTopicPerm"] == "PUB" and first["topicPerms"] == ["a=SUB"]
    assert first["defaultGroupPerm"] == "SUB" and first["admin"] is False
    assert written["dataVersion"] == [{"counter": 1, "timestamp": manager.version.timestamp}]
    assert stat.S_IMODE(manager.path.stat().st_mode) == 0o640
    assert manager.rules.accounts["firstKey1"].default_group_perm == 8


def test_bad_updates_write_nothing(manager: PlainAclManager) -> None:
    before = manager.path.read_text()
    with pytest.raises(AclError, match="length should longer than 6"):
        manager.update_account(AccountConfig(access_key="tiny", secret_key="secretive"))
    with pytest.raises(AclError, match="The expected permissions"):
        manager.update_account(
            AccountConfig(access_key="thirdKey", secret_key="thirdSecret", topic_perms=["t=ALL"])
        )
    with pytest.raises(AclError, match="Netaddress"):
        manager.update_global_white(["10.1.2"])
    assert manager.path.read_text() == before
    assert manager.version.counter == 0


def test_delete_and_global_white(manager: PlainAclManager, tmp_path: Path) -> None:
    assert not manager.delete_account("")
    assert not manager.delete_account("unknownKey")
    assert manager.delete_account("secondKey")
    assert "secondKey" not in manager.rules.accounts
    assert not manager.update_global_white(["1.2.3.4"], str(tmp_path / "other.yml"))
    assert manager.update_global_white(["1.2.3.4", "10.0.0.*"], str(manager.path))
    assert document(manager)["globalWhiteRemoteAddresses"] == ["1.2.3.4", "10.0.0.*"]
    assert manager.version.counter == 2
    assert manager.rules.global_white[0].matches("1.2.3.4")


def test_reload_only_on_change_and_never_to_a_broken_file(manager: PlainAclManager) -> None:
    assert not manager.reload_if_changed()
    manager.path.write_text(FILE.replace("secondKey", "renamedKey"))
    os.utime(manager.path, ns=(1, 1))  # a different stamp even on a coarse clock
    assert manager.reload_if_changed()
    assert "renamedKey" in manager.rules.accounts
    manager.path.write_text("accounts: [\n")
    os.utime(manager.path, ns=(2, 2))
    assert not manager.reload_if_changed()
    assert "renamedKey" in manager.rules.accounts


def test_a_missing_file_is_created_empty_and_refuses_everyone(tmp_path: Path) -> None:
    manager = PlainAclManager(tmp_path / "conf" / "plain_acl.yml")
    manager.load()
    assert manager.path.exists()
    assert manager.rules.accounts == {} and manager.rules.global_white == ()

"""``rmq acl ...`` and its mqadmin names against a broker with ACL on; ``rmq broker --acl``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from broker import Broker
from broker.testing import running_broker
from cli.broker_cmd import build_config
from cli.main import app
from nameserver import NameServer

ACL_FILE = """\
accounts:
  - accessKey: adminKey1
    secretKey: adminSecret
    admin: true
  - accessKey: plainUser
    secretKey: plainSecret
    defaultTopicPerm: PUB
"""


class Rmq:
    def __init__(self, namesrv: str, broker: Broker) -> None:
        self.namesrv = namesrv
        self.broker = broker
        self.runner = CliRunner()

    async def __call__(
        self, *args: str, keys: tuple[str, str] | None = ("adminKey1", "adminSecret")
    ) -> Result:
        env = {"NAMESRV_ADDR": self.namesrv, "RMQ_ACCESS_KEY": "", "RMQ_SECRET_KEY": ""}
        if keys is not None:
            env["RMQ_ACCESS_KEY"], env["RMQ_SECRET_KEY"] = keys
        return await asyncio.to_thread(self.runner.invoke, app, list(args), env=env)

    async def json(self, *args: str) -> Any:
        result = await self(*args, "--json")
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)


@pytest.fixture
def acl_file(tmp_path: Path) -> Path:
    path = tmp_path / "plain_acl.yml"
    path.write_text(ACL_FILE)
    return path


@pytest.fixture
async def rmq(tmp_path: Path, acl_file: Path) -> AsyncIterator[Rmq]:
    async with NameServer("127.0.0.1", 0) as namesrv:
        async with running_broker(
            tmp_path / "store", namesrv_addr=namesrv.address, acl_enable=True, acl_file=str(acl_file)
        ) as broker:
            yield Rmq(namesrv.address, broker)


def accounts(path: Path) -> dict[str, dict[str, Any]]:
    return {a["accessKey"]: a for a in yaml.safe_load(path.read_text())["accounts"]}


async def test_account_commands_rewrite_the_brokers_file(rmq: Rmq, acl_file: Path) -> None:
    addr = rmq.broker.address
    done = await rmq.json(
        "acl",
        "update-account",
        "-b",
        addr,
        "-a",
        "newcomer1",
        "-s",
        "newSecret1",
        "-t",
        "Orders=PUB,Audit=SUB",
    )
    assert done == {"brokers": [addr], "success": True}
    assert accounts(acl_file)["newcomer1"]["topicPerms"] == ["Orders=PUB", "Audit=SUB"]

    # mqadmin's name and options, across the cluster
    result = await rmq(
        "updateAclConfig", "-c", "DefaultCluster", "-a", "newcomer1", "-s", "newSecret2", "-m", "true"
    )
    assert result.exit_code == 0, result.output
    assert accounts(acl_file)["newcomer1"]["secretKey"] == "newSecret2"
    assert accounts(acl_file)["newcomer1"]["admin"] is True

    [row] = await rmq.json("acl", "version", "-b", addr)
    assert row["counter"] == 2
    assert row["aclFilePath"] == str(acl_file.absolute())
    [again] = await rmq.json("clusterAclConfigVersion", "-c", "DefaultCluster")
    assert again["counter"] == 2

    await rmq.json("acl", "update-global-white", "-b", addr, "-g", "10.10.103.*,192.168.0.*")
    assert yaml.safe_load(acl_file.read_text())["globalWhiteRemoteAddresses"] == [
        "10.10.103.*",
        "192.168.0.*",
    ]

    shown = await rmq.json("acl", "config", "-b", addr)
    assert shown[addr]["globalWhiteAddrs"] == ["10.10.103.*", "192.168.0.*"]
    assert {a["accessKey"] for a in shown[addr]["accounts"]} == {"adminKey1", "plainUser", "newcomer1"}

    result = await rmq("deleteAclConfig", "-b", addr, "-a", "newcomer1")
    assert result.exit_code == 0, result.output
    assert "newcomer1" not in accounts(acl_file)


async def test_refusals_are_one_line_errors(rmq: Rmq, acl_file: Path) -> None:
    addr = rmq.broker.address
    unsigned = await rmq("acl", "update-account", "-b", addr, "-a", "intruder1", "-s", "intruder1", keys=None)
    assert unsigned.exit_code == 1
    [line] = unsigned.stderr.strip().splitlines()
    assert line.startswith("error: ") and "No accessKey is configured" in line
    not_admin = await rmq(
        "acl",
        "update-account",
        "-b",
        addr,
        "-a",
        "intruder1",
        "-s",
        "intruder1",
        keys=("plainUser", "plainSecret"),
    )
    assert not_admin.exit_code == 1 and "Need admin permission" in not_admin.stderr
    assert "intruder1" not in acl_file.read_text()

    missing = await rmq("acl", "delete-account", "-b", addr, "-a", "nobodyHere")
    assert missing.exit_code == 1 and "has been deleted failed" in missing.stderr
    nowhere = await rmq("acl", "version")
    assert nowhere.exit_code != 0 and "--broker or --cluster" in nowhere.stderr
    bad_flag = await rmq("acl", "update-account", "-b", addr, "-a", "someone1", "-s", "someone1", "-m", "yes")
    assert bad_flag.exit_code != 0 and "true or false" in bad_flag.stderr


def test_broker_acl_option_turns_acl_on(tmp_path: Path, acl_file: Path) -> None:
    config = build_config(tmp_path / "store", None, acl_file=acl_file)
    assert config.acl_enable and config.acl_path == acl_file
    plain = build_config(tmp_path / "store", None)
    assert not plain.acl_enable
    conf = tmp_path / "broker.conf"
    conf.write_text("aclEnable=true\n")
    assert build_config(tmp_path / "store", conf).acl_enable
    result = CliRunner().invoke(
        app, ["broker", "-s", str(tmp_path / "s"), "--acl", str(tmp_path / "absent.yml")]
    )
    assert result.exit_code == 2

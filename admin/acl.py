"""Plain-ACL administration of brokers (4.9.x): what ``mqadmin updateAclConfig``, ``deleteAclConfig``,
``updateGlobalWhiteAddr``, ``clusterAclConfigVersion`` and (4.9.7's) ``getAclConfig`` do, for one broker.

Sign these requests with an admin account's keys (``Admin(..., access_key=..., secret_key=...)``) when the
broker enforces ACL. A 4.9.8 broker refuses a global-white-list update that names no ACL file ("the custom
field <aclFileFullPath> is null"), although its own mqadmin sends none without ``-p``; when no file is given
here, the one the broker reports in its ACL version answer is named, so the update works on either broker.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from admin.errors import AdminError
from admin.rpc import AdminRpc, check
from rocketmq_wire import fastjson
from rocketmq_wire.bodies.acl import GetBrokerClusterAclConfigResponseBody, PlainAccessConfig
from rocketmq_wire.bodies.base import Fields
from rocketmq_wire.bodies.topic_config import DataVersion
from rocketmq_wire.codes import RequestCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.acl import (
    CreateAccessConfigRequestHeader,
    DeleteAccessConfigRequestHeader,
    GetBrokerAclConfigResponseHeader,
    UpdateGlobalWhiteAddrsConfigRequestHeader,
)

#: Apache's default ACL file, relative to ``ROCKETMQ_HOME``: preferred when a broker reports several.
DEFAULT_ACL_FILE_SUFFIX = "conf/plain_acl.yml"


@dataclasses.dataclass(frozen=True, slots=True)
class AclVersionInfo:
    """A broker's answer to GET_BROKER_CLUSTER_ACL_INFO (Java's ``ClusterAclVersionInfo``)."""

    cluster: str
    broker_name: str
    broker_addr: str
    version: DataVersion
    #: Each ACL file's full path and version.
    files: dict[str, DataVersion]


def _joined(entries: Sequence[str] | None) -> str | None:
    return None if entries is None else ",".join(entries)


async def update_account(rpc: AdminRpc, broker_addr: str, account: PlainAccessConfig) -> None:
    """Create the account on the broker, or update the one with its access key."""
    header = CreateAccessConfigRequestHeader(
        access_key=account.access_key,
        secret_key=account.secret_key,
        white_remote_address=account.white_remote_address,
        admin=account.admin,
        default_topic_perm=account.default_topic_perm,
        default_group_perm=account.default_group_perm,
        topic_perms=_joined(account.topic_perms),
        group_perms=_joined(account.group_perms),
    )
    request = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, header)
    check(await rpc.server(broker_addr, request), "ACL account update", broker_addr)


async def delete_account(rpc: AdminRpc, broker_addr: str, access_key: str) -> None:
    header = DeleteAccessConfigRequestHeader(access_key=access_key)
    request = RemotingCommand.request(RequestCode.DELETE_ACL_CONFIG, header)
    check(await rpc.server(broker_addr, request), "ACL account deletion", broker_addr)


async def acl_version(rpc: AdminRpc, broker_addr: str) -> AclVersionInfo:
    request = RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_ACL_INFO)
    response = check(await rpc.server(broker_addr, request), "ACL version", broker_addr)
    try:
        header = response.read_header(GetBrokerAclConfigResponseHeader)
        assert header.version is not None
        files: dict[str, DataVersion] = {}
        if header.all_acl_file_version:
            parsed = fastjson.loads(header.all_acl_file_version)
            if not isinstance(parsed, dict):
                raise CodecError("allAclFileVersion: expected a JSON object")
            for path, value in parsed.items():
                files[str(path)] = DataVersion.from_object(Fields(value, f"allAclFileVersion[{path!r}]"))
        return AclVersionInfo(
            cluster=header.cluster_name or "",
            broker_name=header.broker_name or "",
            broker_addr=header.broker_addr or broker_addr,
            version=DataVersion.from_json(header.version),
            files=files,
        )
    except CodecError as exc:
        raise AdminError(f"unreadable ACL version from {broker_addr}: {exc}") from exc


def _acl_file_of(info: AclVersionInfo) -> str:
    """The file a global-white-list update should name: the default one, else the only one."""
    preferred = [path for path in info.files if path.replace("\\", "/").endswith(DEFAULT_ACL_FILE_SUFFIX)]
    candidates = preferred or list(info.files)
    if len(candidates) != 1:
        raise AdminError(f"{info.broker_addr} reports {len(info.files)} ACL files; name the one to update")
    return candidates[0]


async def update_global_white(
    rpc: AdminRpc, broker_addr: str, addresses: Sequence[str], acl_file: str | None = None
) -> str:
    """Replace the broker's global white list; returns the ACL file it was written to.

    The list travels as one comma-separated string, so a brace pattern (``192.168.1.{1,2}``) cannot be
    sent: the broker would split it at its commas. Such an entry is refused here, before anything is sent.
    """
    for entry in addresses:
        if "{" in entry and "," in entry:
            raise AdminError(
                f"{entry!r} cannot be sent: the request separates entries with commas; "
                "list the addresses one by one instead"
            )
    if acl_file is None:
        acl_file = _acl_file_of(await acl_version(rpc, broker_addr))
    header = UpdateGlobalWhiteAddrsConfigRequestHeader(
        global_white_addrs=",".join(addresses), acl_file_full_path=acl_file
    )
    request = RemotingCommand.request(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, header)
    check(await rpc.server(broker_addr, request), "global white list update", broker_addr)
    return acl_file


async def acl_config(rpc: AdminRpc, broker_addr: str) -> GetBrokerClusterAclConfigResponseBody:
    """The global white list and every account, secrets included (brokers up to 4.9.7, and this project's;
    4.9.8 answers REQUEST_CODE_NOT_SUPPORTED)."""
    request = RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG)
    response = check(await rpc.server(broker_addr, request), "ACL config", broker_addr)
    try:
        return GetBrokerClusterAclConfigResponseBody.from_json(response.body)
    except CodecError as exc:
        raise AdminError(f"unreadable ACL config from {broker_addr}: {exc}") from exc

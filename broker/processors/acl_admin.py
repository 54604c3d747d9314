"""The plain-ACL administration codes (UPDATE_AND_CREATE_ACL_CONFIG, DELETE_ACL_CONFIG,
UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, GET_BROKER_CLUSTER_ACL_INFO, GET_BROKER_CLUSTER_ACL_CONFIG), answered as
Apache's ``AdminBrokerProcessor`` answers them.

A change is written to the ACL file at once and takes effect at once. A refused change answers the code's
own failure code (209, 210, 211) with Apache's remark: the ACL error's message, or "... has been updated
failed." when the change was not possible. On a broker with ACL off Apache answers these with a null
remark (or not at all); here the remark says ACL is off.
"""

from __future__ import annotations

import logging

from broker.acl import AccountConfig, AclError, PlainAclManager
from broker.config import BrokerConfig
from broker.processors.common import read_header
from rocketmq_wire import RemotingCommand, ResponseCode
from rocketmq_wire.bodies.acl import GetBrokerClusterAclConfigResponseBody, PlainAccessConfig
from rocketmq_wire.fastjson import dumps
from rocketmq_wire.headers.acl import (
    CreateAccessConfigRequestHeader,
    DeleteAccessConfigRequestHeader,
    GetBrokerAclConfigResponseHeader,
    UpdateGlobalWhiteAddrsConfigRequestHeader,
)
from rocketmq_wire.transport import Connection

log = logging.getLogger("broker.acl")

ACL_OFF = "ACL is not enabled on this broker (aclEnable=false)"


def split_list(text: str | None) -> list[str] | None:
    """Java's ``UtilAll.split(text, ",")``: ``None`` stays ``None``; trailing empty pieces are dropped."""
    if text is None:
        return None
    pieces = text.split(",")
    while pieces and not pieces[-1]:
        pieces.pop()
    return pieces


class _AclProcessor:
    """An ACL administration code: all of them work on the ACL rules in force (``None`` with ACL off)."""

    def __init__(self, *, acl: PlainAclManager | None) -> None:
        self.manager = acl


class UpdateAccessConfigProcessor(_AclProcessor):
    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, CreateAccessConfigRequestHeader)
        failed = ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED
        if self.manager is None:
            return request.make_response(failed, ACL_OFF)
        account = AccountConfig(
            access_key=header.access_key,
            secret_key=header.secret_key,
            white_remote_address=header.white_remote_address,
            admin=bool(header.admin),
            default_topic_perm=header.default_topic_perm,
            default_group_perm=header.default_group_perm,
            topic_perms=split_list(header.topic_perms),
            group_perms=split_list(header.group_perms),
        )
        try:
            self.manager.update_account(account)
        except (AclError, OSError) as exc:
            log.error(
                "updating ACL account %s for %s failed: %s", header.access_key, conn.remote_address, exc
            )
            return request.make_response(failed, str(exc))
        return request.make_response(ResponseCode.SUCCESS)


class DeleteAccessConfigProcessor(_AclProcessor):
    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, DeleteAccessConfigRequestHeader)
        failed = ResponseCode.DELETE_ACL_CONFIG_FAILED
        if self.manager is None:
            return request.make_response(failed, ACL_OFF)
        log.info("deleting ACL account %s, asked by %s", header.access_key, conn.remote_address)
        try:
            deleted = self.manager.delete_account(header.access_key)
        except (AclError, OSError) as exc:
            return request.make_response(failed, str(exc))
        if not deleted:
            remark = (
                f"The accesskey[{header.access_key}] corresponding to accessConfig has been deleted failed."
            )
            log.warning("%s", remark)
            return request.make_response(failed, remark)
        return request.make_response(ResponseCode.SUCCESS)


class UpdateGlobalWhiteAddrsProcessor(_AclProcessor):
    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, UpdateGlobalWhiteAddrsConfigRequestHeader)
        failed = ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED
        if self.manager is None:
            return request.make_response(failed, ACL_OFF)
        addresses = split_list(header.global_white_addrs) or []
        try:
            updated = self.manager.update_global_white(addresses, header.acl_file_full_path)
        except (AclError, OSError) as exc:
            return request.make_response(failed, str(exc))
        if not updated:
            remark = f"The globalWhiteAddresses[{header.global_white_addrs}] has been updated failed."
            log.warning("%s", remark)
            return request.make_response(failed, remark)
        return request.make_response(ResponseCode.SUCCESS)


class GetAclVersionProcessor(_AclProcessor):
    """GET_BROKER_CLUSTER_ACL_INFO: the ACL file's version, and the broker's identity."""

    def __init__(self, *, acl: PlainAclManager | None, config: BrokerConfig) -> None:
        super().__init__(acl=acl)
        self._config = config

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        manager = self.manager
        if manager is None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, ACL_OFF)
        config = self._config
        stamp = manager.version
        header = GetBrokerAclConfigResponseHeader(
            version=stamp.to_json().decode("utf-8"),
            all_acl_file_version=dumps({str(manager.path): stamp.to_bean()}),
            broker_name=config.broker_name,
            broker_addr=config.broker_addr,
            cluster_name=config.broker_cluster_name,
        )
        return request.make_response(ResponseCode.SUCCESS, header=header)


class GetAclConfigProcessor(_AclProcessor):
    """GET_BROKER_CLUSTER_ACL_CONFIG (4.9.7 and earlier): the global white list and every account."""

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        manager = self.manager
        if manager is None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, ACL_OFF)
        body = GetBrokerClusterAclConfigResponseBody(
            global_white_addrs=manager.global_white_addresses,
            plain_access_configs=[
                PlainAccessConfig(
                    access_key=account.access_key,
                    secret_key=account.secret_key,
                    white_remote_address=account.white_remote_address,
                    admin=account.admin,
                    default_topic_perm=account.default_topic_perm,
                    default_group_perm=account.default_group_perm,
                    topic_perms=account.topic_perms,
                    group_perms=account.group_perms,
                )
                for account in manager.accounts
            ],
        )
        return request.make_response(ResponseCode.SUCCESS, body=body.to_json())

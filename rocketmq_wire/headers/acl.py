"""Headers of the plain-ACL administration requests (4.9.x): create or update an account, delete one,
replace the global white list, and the answer to "which ACL version do you have".

Declared in Java's field order. ``admin`` is a Java ``boolean``: Java senders always write it, and a request
without it means false.
``aclFileFullPath`` is ``@CFNotNull`` in Apache's header although mqadmin leaves it out when ``-p`` is not
given: a 4.9.8 broker then refuses the request with "the custom field <aclFileFullPath> is null". The
permission lists travel as one comma-separated string each (``topicA=PUB,topicB=SUB``).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from rocketmq_wire.codes import RequestCode
from rocketmq_wire.headers.base import CommandHeader, jbool, jstr


@dataclasses.dataclass(slots=True, kw_only=True)
class CreateAccessConfigRequestHeader(CommandHeader):
    """UPDATE_AND_CREATE_ACL_CONFIG: one account, created or updated by access key."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.UPDATE_AND_CREATE_ACL_CONFIG,)

    access_key: str | None = jstr("accessKey", required=True)
    secret_key: str | None = jstr("secretKey")
    white_remote_address: str | None = jstr("whiteRemoteAddress")
    admin: bool | None = jbool("admin")
    default_topic_perm: str | None = jstr("defaultTopicPerm")
    default_group_perm: str | None = jstr("defaultGroupPerm")
    topic_perms: str | None = jstr("topicPerms")
    group_perms: str | None = jstr("groupPerms")


@dataclasses.dataclass(slots=True, kw_only=True)
class DeleteAccessConfigRequestHeader(CommandHeader):
    """DELETE_ACL_CONFIG: remove the account with this access key."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.DELETE_ACL_CONFIG,)

    access_key: str | None = jstr("accessKey", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class UpdateGlobalWhiteAddrsConfigRequestHeader(CommandHeader):
    """UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: the new list (comma-separated) for the named ACL file."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,)

    global_white_addrs: str | None = jstr("globalWhiteAddrs", required=True)
    acl_file_full_path: str | None = jstr("aclFileFullPath", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class GetBrokerAclConfigResponseHeader(CommandHeader):
    """The answer to GET_BROKER_CLUSTER_ACL_INFO.

    ``version`` is the default ACL file's DataVersion as JSON; ``allAclFileVersion`` a JSON object from
    each ACL file's full path to its DataVersion.
    """

    version: str | None = jstr("version", required=True)
    all_acl_file_version: str | None = jstr("allAclFileVersion")
    broker_name: str | None = jstr("brokerName", required=True)
    broker_addr: str | None = jstr("brokerAddr", required=True)
    cluster_name: str | None = jstr("clusterName", required=True)

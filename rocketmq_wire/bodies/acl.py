"""Bodies of plain-ACL administration: an account as Apache's ``PlainAccessConfig`` bean, and the answer
to GET_BROKER_CLUSTER_ACL_CONFIG (``GetBrokerClusterAclConfigResponseBody``: the global white list and every
account).

GET_BROKER_CLUSTER_ACL_CONFIG is served by 4.9.7 and earlier and was dropped in 4.9.8 (whose mqadmin has no
``getAclConfig`` either); its answer carries secret keys, which is why this project's broker only gives it
to admin accounts when ACL is on. Its response header class in Java has no field that is ever set, so the
answer has no header entries: everything is in this body.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Self

from rocketmq_wire import fastjson
from rocketmq_wire.bodies.base import Fields, JsonBody, bean, object_fields, string_list


@dataclasses.dataclass(kw_only=True)
class PlainAccessConfig(JsonBody):
    """One ACL account; the permission lists hold ``resource=PERM`` entries."""

    access_key: str | None = None
    secret_key: str | None = None
    white_remote_address: str | None = None
    admin: bool = False
    default_topic_perm: str | None = None
    default_group_perm: str | None = None
    topic_perms: list[str] | None = None
    group_perms: list[str] | None = None

    def to_bean(self) -> fastjson.Bean:
        return bean(
            accessKey=self.access_key,
            secretKey=self.secret_key,
            whiteRemoteAddress=self.white_remote_address,
            admin=self.admin,
            defaultTopicPerm=self.default_topic_perm,
            defaultGroupPerm=self.default_group_perm,
            topicPerms=None if self.topic_perms is None else list(self.topic_perms),
            groupPerms=None if self.group_perms is None else list(self.group_perms),
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        topics = obj.get_array("topicPerms")
        groups = obj.get_array("groupPerms")
        return cls(
            access_key=obj.get_str("accessKey"),
            secret_key=obj.get_str("secretKey"),
            white_remote_address=obj.get_str("whiteRemoteAddress"),
            admin=obj.get_bool("admin"),
            default_topic_perm=obj.get_str("defaultTopicPerm"),
            default_group_perm=obj.get_str("defaultGroupPerm"),
            topic_perms=None if topics is None else string_list(topics, f"{obj.path}.topicPerms"),
            group_perms=None if groups is None else string_list(groups, f"{obj.path}.groupPerms"),
        )


def _account(value: Any, path: str) -> PlainAccessConfig:
    return PlainAccessConfig.from_object(object_fields(value, path))


@dataclasses.dataclass(kw_only=True)
class GetBrokerClusterAclConfigResponseBody(JsonBody):
    """``List<String> globalWhiteAddrs`` and ``List<PlainAccessConfig> plainAccessConfigs``."""

    global_white_addrs: list[str] | None = None
    plain_access_configs: list[PlainAccessConfig] | None = None

    def to_bean(self) -> fastjson.Bean:
        return bean(
            globalWhiteAddrs=None if self.global_white_addrs is None else list(self.global_white_addrs),
            plainAccessConfigs=None
            if self.plain_access_configs is None
            else [config.to_bean() for config in self.plain_access_configs],
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        white = obj.get_array("globalWhiteAddrs")
        return cls(
            global_white_addrs=None if white is None else string_list(white, f"{obj.path}.globalWhiteAddrs"),
            plain_access_configs=obj.items_of("plainAccessConfigs", _account),
        )

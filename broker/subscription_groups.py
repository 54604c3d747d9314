"""Per consumer group settings: how often a failed message is retried, whether the group may consume.

Apache keeps these in ``subscriptionGroup.json`` and creates a group with default settings the first time
it is seen (``autoCreateSubscriptionGroup``). This broker keeps them in memory only; every group starts
with Apache's defaults, which is what a stock broker gives a group nobody configured.
"""

from __future__ import annotations

import dataclasses
import logging

log = logging.getLogger("broker.subscription_groups")

#: ``MixAll.MASTER_ID``.
MASTER_ID = 0


@dataclasses.dataclass(slots=True)
class SubscriptionGroupConfig:
    """Apache's ``SubscriptionGroupConfig`` fields that change what the broker does."""

    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = MASTER_ID
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True


class SubscriptionGroupManager:
    def __init__(self, auto_create: bool = True) -> None:
        self.auto_create = auto_create
        self._groups: dict[str, SubscriptionGroupConfig] = {}

    def find(self, group: str) -> SubscriptionGroupConfig | None:
        """The group's settings; a new group gets the defaults when auto-creation is on."""
        config = self._groups.get(group)
        if config is None and self.auto_create:
            config = SubscriptionGroupConfig(group_name=group)
            self._groups[group] = config
            log.info("auto-created subscription group %s", group)
        return config

    def put(self, config: SubscriptionGroupConfig) -> None:
        self._groups[config.group_name] = config

    def groups(self) -> list[str]:
        return sorted(self._groups)

"""Tables and JSON for the group commands: group settings, members' running info, a broker's progress of
every group, a broker's producers, and queue allocations. Server text goes into cells as
:class:`rich.text.Text`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table

from admin import GroupConfigOnBroker
from cli.common import cell, to_plain
from cli.render import key_value_table, timestamp
from rocketmq_wire.bodies import ConsumerRunningInfo, ConsumeStatsList, MessageQueue, ProducerTableInfo


def group_config_table(group: str, found: Sequence[GroupConfigOnBroker]) -> Table:
    """One column per broker group, one row per setting (mqadmin prints one block per broker)."""
    table = Table(title=f"Settings of {group}", title_justify="left")
    table.add_column("Setting")
    for item in found:
        table.add_column(f"{item.cluster}:{item.broker_name}")
    if not found:
        return table
    names = list(to_plain(found[0].config))
    for name in names:
        table.add_row(cell(name), *(cell(to_plain(item.config)[name]) for item in found))
    return table


def _queue(queue: MessageQueue) -> str:
    return f"{queue.topic}@{queue.broker_name}:{queue.queue_id}"


def running_info_json(info: ConsumerRunningInfo) -> dict[str, Any]:
    return {
        "properties": dict(info.properties),
        "subscriptions": [
            {"topic": s.topic, "expression": s.sub_string, "type": s.expression_type}
            for s in info.subscription_set
        ],
        "queues": [{"queue": _queue(q), **to_plain(p)} for q, p in info.mq_table.items()],
        "status": {topic: to_plain(s) for topic, s in info.status_table.items()},
        "jstack": info.jstack,
    }


def running_info_tables(client_id: str, info: ConsumerRunningInfo) -> list[Table]:
    """mqadmin consumerStatus's blocks: properties, subscriptions, held queues, per-topic RT/TPS."""
    tables = [key_value_table(info.properties, f"Properties of {client_id}")]
    subs = Table("Topic", "Expression", "Type", title="Subscriptions", title_justify="left")
    for sub in info.subscription_set:
        subs.add_row(cell(sub.topic), cell(sub.sub_string), cell(sub.expression_type))
    tables.append(subs)
    queues = Table(title="Queues held", title_justify="left")
    for heading in ("Queue", "Commit offset", "Cached", "Cached min", "Cached max", "Locked", "Last pull"):
        queues.add_column(heading)
    for queue, pq in sorted(info.mq_table.items(), key=lambda item: _queue(item[0])):
        queues.add_row(
            cell(_queue(queue)),
            cell(pq.commit_offset),
            cell(pq.cached_msg_count),
            cell(pq.cached_msg_min_offset),
            cell(pq.cached_msg_max_offset),
            cell("yes" if pq.locked else "no"),
            cell(timestamp(pq.last_pull_timestamp)),
        )
    tables.append(queues)
    rates = Table(title="RT and TPS (last minute)", title_justify="left")
    for heading in ("Topic", "Pull RT", "Pull TPS", "Consume RT", "OK TPS", "Failed TPS", "Failed (hour)"):
        rates.add_column(heading, justify="left" if heading == "Topic" else "right")
    for topic, figures in sorted(info.status_table.items()):
        rates.add_row(
            cell(topic),
            cell(f"{figures.pull_rt:.2f}"),
            cell(f"{figures.pull_tps:.2f}"),
            cell(f"{figures.consume_rt:.2f}"),
            cell(f"{figures.consume_ok_tps:.2f}"),
            cell(f"{figures.consume_failed_tps:.2f}"),
            cell(figures.consume_failed_msgs),
        )
    tables.append(rates)
    return tables


def running_summary_table(group: str, infos: Sequence[tuple[str, ConsumerRunningInfo]]) -> Table:
    table = Table(title=f"Members of {group}", title_justify="left")
    for heading in ("Client ID", "Model", "Type", "Subscriptions", "Queues", "OK TPS"):
        table.add_column(heading)
    for client_id, info in infos:
        tps = sum(s.consume_ok_tps for s in info.status_table.values())
        table.add_row(
            cell(client_id),
            cell(info.properties.get("messageModel", "")),
            cell(info.properties.get("PROP_CONSUME_TYPE", "")),
            cell(", ".join(f"{s.topic}({s.sub_string})" for s in info.subscription_set)),
            cell(len(info.mq_table)),
            cell(f"{tps:.2f}"),
        )
    return table


def producer_table_json(broker_addr: str, table: ProducerTableInfo) -> dict[str, Any]:
    """One broker's producers by group, groups in the order the broker sent them (its ``HashMap``'s)."""
    return {"broker_addr": broker_addr, "groups": to_plain(table.data)}


def producer_table_table(broker_addr: str, table: ProducerTableInfo) -> Table:
    """One row per connected producer; a group the broker lists without members gets a row saying so, as
    mqadmin prints "instances are empty" for it."""
    grid = Table(title=f"Producers on {broker_addr}", title_justify="left")
    for heading in ("Group", "Client ID", "Remote address", "Language", "Version", "Last heartbeat"):
        grid.add_column(heading)
    for group, producers in table.data.items():
        if not producers:
            grid.add_row(cell(group), cell("(no instances)"), "", "", "", "")
        for producer in producers:
            grid.add_row(
                cell(group),
                cell(producer.client_id),
                cell(producer.remote_ip),
                cell(producer.language),
                cell(producer.version),
                cell(timestamp(producer.last_update_timestamp)),
            )
    return grid


def broker_consume_stats_rows(stats: ConsumeStatsList) -> dict[str, Any]:
    rows = []
    for entry in stats.consume_stats_list:
        for group, per_topic in entry.items():
            for topic_stats in per_topic:
                for queue, wrapper in sorted(topic_stats.offset_table.items(), key=lambda i: _queue(i[0])):
                    rows.append(
                        {
                            "group": group,
                            "topic": queue.topic,
                            "broker_name": queue.broker_name,
                            "queue_id": queue.queue_id,
                            "broker_offset": wrapper.broker_offset,
                            "consumer_offset": wrapper.consumer_offset,
                            "diff": wrapper.broker_offset - wrapper.consumer_offset,
                            "last_timestamp": wrapper.last_timestamp,
                        }
                    )
    return {"broker_addr": stats.broker_addr, "total_diff": stats.total_diff, "queues": rows}


def broker_consume_stats_table(stats: ConsumeStatsList) -> Table:
    data = broker_consume_stats_rows(stats)
    table = Table(title=f"Consume stats of {stats.broker_addr}", title_justify="left")
    for heading in (
        "Topic",
        "Group",
        "Broker",
        "QID",
        "Broker offset",
        "Consumer offset",
        "Diff",
        "Last time",
    ):
        table.add_column(heading)
    for row in data["queues"]:
        table.add_row(
            cell(row["topic"]),
            cell(row["group"]),
            cell(row["broker_name"]),
            cell(row["queue_id"]),
            cell(row["broker_offset"]),
            cell(row["consumer_offset"]),
            cell(row["diff"]),
            cell(timestamp(row["last_timestamp"])),
        )
    table.caption = f"diff total: {stats.total_diff}"
    return table


def allocation_json(result: dict[str, list[MessageQueue]]) -> dict[str, Any]:
    """Shaped like mqadmin allocateMQ's RebalanceResult: ``{"result": {client: [queue, ...]}}``."""
    return {
        "result": {
            client: [{"topic": q.topic, "brokerName": q.broker_name, "queueId": q.queue_id} for q in queues]
            for client, queues in result.items()
        }
    }


def allocation_table(topic: str, result: dict[str, list[MessageQueue]]) -> Table:
    table = Table("Client", "Queues", title=f"Allocation of {topic}", title_justify="left")
    for client, queues in result.items():
        table.add_row(cell(client), cell(", ".join(f"{q.broker_name}:{q.queue_id}" for q in queues)))
    return table


def consume_modes_table(broker: str, rows: Sequence[Mapping[str, Any]]) -> Table:
    """Rows of topic, group, mode and shared queue count, as ``rmq group consume-modes`` lists them."""
    table = Table(title=f"Consume modes on {broker}", title_justify="left")
    for name in ("Topic", "Group", "Mode", "Pop share queues"):
        table.add_column(name)
    for row in rows:
        table.add_row(
            cell(row["topic"]), cell(row["group"]), cell(row["mode"]), cell(str(row["pop_share_queue_num"]))
        )
    return table

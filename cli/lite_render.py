"""Tables for the ``rmq lite`` commands: one row per broker, as mqadmin's lite commands print one line per
broker, with a broker that refused or did not answer shown by its error in place of its figures."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TypeVar

from rich.table import Table
from rich.text import Text

from admin import BrokerAnswer, LiteGroupLag
from cli.common import cell
from cli.render import timestamp
from rocketmq_wire.bodies import (
    GetBrokerLiteInfoResponseBody,
    GetLiteClientInfoResponseBody,
    GetLiteTopicInfoResponseBody,
    GetParentTopicInfoResponseBody,
    LiteLagInfo,
)

T = TypeVar("T")


def _table(title: str, headings: Sequence[str]) -> Table:
    table = Table(title=title, title_justify="left")
    for n, heading in enumerate(headings):
        table.add_column(heading, justify="left" if n == 0 else "right")
    return table


def _rows(
    table: Table, answers: Sequence[BrokerAnswer[T]], cells: Callable[[T], list[Text]], *, label: str = "name"
) -> Table:
    """A row per broker: its figures, or its error across the remaining columns."""
    for a in answers:
        name = a.broker_name if label == "name" else a.addr
        if a.answer is None:
            table.add_row(cell(name), cell(f"error: {a.error}"), *([""] * (len(table.columns) - 2)))
        else:
            table.add_row(cell(name), *cells(a.answer))
    return table


def _when(ms: int) -> Text:
    return cell(timestamp(ms) or "-")


def broker_lite_table(answers: Sequence[BrokerAnswer[GetBrokerLiteInfoResponseBody]]) -> Table:
    headings = ("Broker", "Store type", "Max LMQ", "LMQ in use", "Subscriptions", "Order infos", "CQ table")
    table = _table("Lite figures", (*headings, "Offset table", "Event map"))

    def cells(info: GetBrokerLiteInfoResponseBody) -> list[Text]:
        figures = (
            info.max_lmq_num,
            info.current_lmq_num,
            info.lite_subscription_count,
            info.order_info_count,
        )
        more = (info.cq_table_size, info.offset_table_size, info.event_map_size)
        return [cell(info.store_type), *(cell(n) for n in (*figures, *more))]

    return _rows(table, answers, cells, label="addr")


def broker_lite_detail(answer: BrokerAnswer[GetBrokerLiteInfoResponseBody]) -> list[str]:
    """mqadmin's ``-d`` lines: each parent topic's TTL and bound groups, as JSON."""
    info = answer.answer
    if info is None:
        return []
    return [
        f"{answer.addr} topic meta: {json.dumps(info.topic_meta or {}, ensure_ascii=False)}",
        f"{answer.addr} group meta: {json.dumps(info.group_meta or {}, ensure_ascii=False)}",
    ]


def parent_topic_table(topic: str, answers: Sequence[BrokerAnswer[GetParentTopicInfoResponseBody]]) -> Table:
    table = _table(f"Parent topic {topic}", ("Broker", "TTL", "Lite topics", "LMQ in use", "Groups"))

    def cells(info: GetParentTopicInfoResponseBody) -> list[Text]:
        groups = "" if info.groups is None else ", ".join(info.groups)
        return [cell(info.ttl), cell(info.lite_topic_count), cell(info.lmq_num), cell(groups)]

    return _rows(table, answers, cells)


def lite_topic_table(title: str, answers: Sequence[BrokerAnswer[GetLiteTopicInfoResponseBody]]) -> Table:
    headings = ("Broker", "Min offset", "Max offset", "Last update", "Sharded here", "Subscribers")
    table = _table(title, headings)

    def cells(info: GetLiteTopicInfoResponseBody) -> list[Text]:
        offsets = info.topic_offset
        if offsets is None:
            figures = [cell("-"), cell("-"), cell("-")]
        else:
            figures = [
                cell(offsets.min_offset),
                cell(offsets.max_offset),
                _when(offsets.last_update_timestamp),
            ]
        members = len(info.subscriber or ())
        return [*figures, cell("yes" if info.sharding_to_broker else "no"), cell(members)]

    return _rows(table, answers, cells)


def lite_group_tables(lag: LiteGroupLag) -> list[Table]:
    """The per-broker lag of one lite topic, or the merged top-K lists, and the totals."""
    title = f"Lite group {lag.group} on {lag.parent_topic}"
    tables: list[Table] = []
    if lag.lite_topic is not None:
        headings = ("Broker", "Broker offset", "Consumer offset", "Lag", "Last consumed")
        table = _table(f"{title}, lite topic {lag.lite_topic}", headings)
        for a in lag.brokers:
            wrapper = a.answer.lite_topic_offset_wrapper if a.answer is not None else None
            if a.answer is None:
                table.add_row(cell(a.broker_name), cell(f"error: {a.error}"), "", "", "")
            elif wrapper is None:
                table.add_row(cell(a.broker_name), cell("-"), cell("-"), cell("-"), cell("-"))
            else:
                lag_count = wrapper.broker_offset - wrapper.consumer_offset
                table.add_row(
                    cell(a.broker_name),
                    cell(wrapper.broker_offset),
                    cell(wrapper.consumer_offset),
                    cell(lag_count),
                    _when(wrapper.last_timestamp),
                )
        tables.append(table)
    else:
        tables.append(_lag_table(f"{title}: top lite topics by lag count", lag.lag_count_top_k))
        tables.append(_lag_table(f"{title}: top lite topics by lag time", lag.lag_timestamp_top_k))
        failed = [a for a in lag.brokers if a.answer is None]
        if failed:
            errors = _table("Brokers without an answer", ("Broker", "Error"))
            for a in failed:
                errors.add_row(cell(a.broker_name), cell(a.error))
            tables.append(errors)
    totals = _table("Totals", ("Total lag", "Oldest unconsumed"))
    oldest = lag.earliest_unconsumed_timestamp
    totals.add_row(cell(lag.total_lag_count), _when(oldest or 0))
    tables.append(totals)
    return tables


def _lag_table(title: str, lags: Sequence[LiteLagInfo]) -> Table:
    table = _table(title, ("No.", "Lite topic", "Lag", "Oldest unconsumed"))
    for n, lag in enumerate(lags, 1):
        table.add_row(
            cell(n), cell(lag.lite_topic), cell(lag.lag_count), _when(lag.earliest_unconsumed_timestamp)
        )
    return table


def lite_client_table(title: str, answers: Sequence[BrokerAnswer[GetLiteClientInfoResponseBody]]) -> Table:
    table = _table(title, ("Broker", "Lite topics", "Last access", "Last consume"))

    def cells(info: GetLiteClientInfoResponseBody) -> list[Text]:
        count = cell(info.lite_topic_count if info.lite_topic_count > 0 else "-")
        return [count, _when(info.last_access_time), _when(info.last_consume_time)]

    return _rows(table, answers, cells)

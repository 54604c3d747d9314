"""``rmq cluster ...``: cluster-wide administration (mqadmin clusterList, wipeWritePerm, addWritePerm,
getNamesrvConfig, updateNamesrvConfig, clusterRT, exportMetadata, exportConfigs, exportMetrics).

``rmq clusters`` is defined here as well: it is ``rmq cluster list`` too, and :mod:`cli.main` registers it
at the top level from here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli import params
from cli.common import (
    AccessKey,
    AsJson,
    Namesrv,
    SecretKey,
    Target,
    TimeoutMs,
    cell,
    emit_json,
    out,
    target,
    with_admin,
)
from cli.errors import CliError, friendly
from cli.params import ClusterName

if TYPE_CHECKING:
    from admin import Admin
    from cli.render import BrokerRow

cluster_app = typer.Typer(
    help="Clusters and NameServers: brokers' write permission, NameServer settings.", no_args_is_help=True
)

BrokerName = Annotated[str, typer.Argument(callback=params.not_blank, help="The broker's brokerName")]


def _perm_change(broker_name: str, wipe: bool, where: Target, as_json: bool) -> None:
    changes = with_admin(
        where,
        lambda admin: admin.wipe_write_perm(broker_name) if wipe else admin.add_write_perm(broker_name),
    )
    if as_json:
        emit_json(changes)
        return
    verb = "wipe" if wipe else "add"
    console = out()
    for change in changes:
        console.print(
            cell(
                f"{verb} write perm of broker[{broker_name}] in name server[{change.namesrv}] OK, "
                f"{change.topic_count} topics"
            )
        )


@cluster_app.command("wipe-write-perm")
@friendly
def wipe_write_perm(
    broker_name: BrokerName,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Stop new messages reaching a broker, on every NameServer (mqadmin wipeWritePerm)."""
    _perm_change(broker_name, True, target(namesrv, access_key, secret_key, timeout_ms), as_json)


@cluster_app.command("add-write-perm")
@friendly
def add_write_perm(
    broker_name: BrokerName,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Let messages reach a broker again, on every NameServer (mqadmin addWritePerm)."""
    _perm_change(broker_name, False, target(namesrv, access_key, secret_key, timeout_ms), as_json)


@cluster_app.command("namesrv-config")
@friendly
def namesrv_config(
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Every NameServer's settings (mqadmin getNamesrvConfig)."""
    from cli.render import key_value_table

    where = target(namesrv, access_key, secret_key, timeout_ms)
    found = with_admin(where, lambda admin: admin.namesrv_config())
    if as_json:
        emit_json(found)
        return
    console = out()
    for addr, settings in found.items():
        console.print(key_value_table(settings, f"NameServer {addr}"))


@cluster_app.command("update-namesrv-config")
@friendly
def update_namesrv_config(
    key: Annotated[str, typer.Option("--key", "-k", callback=params.not_blank, help="Setting (Java name)")],
    value: Annotated[str, typer.Option("--value", "-v", help="New value")],
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Change a setting of every NameServer while it runs (mqadmin updateNamesrvConfig)."""
    from rich.table import Table

    where = target(namesrv, access_key, secret_key, timeout_ms)
    written = with_admin(where, lambda admin: admin.update_namesrv_config({key: value}))
    if as_json:
        emit_json({"key": key, "value": value, "namesrvs": written})
        return
    table = Table("NameServer", "Setting", title="Updated", title_justify="left")
    for addr in written:
        table.add_row(cell(addr), cell(f"{key}={value}"))
    out().print(table)


async def _broker_rows(admin: Admin, cluster: str | None) -> list[BrokerRow]:
    from admin import AdminError
    from cli.render import broker_row

    rows = []
    for broker in await admin.brokers(cluster):
        try:
            rows.append(broker_row(broker, await admin.broker_runtime_stats(broker.addr)))
        except AdminError as exc:  # one dead broker should not hide the others
            rows.append(broker_row(broker, None, str(exc)))
    return rows


@friendly
def clusters(
    cluster: ClusterName = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """List clusters and their brokers with version, throughput and disk use (mqadmin clusterList)."""
    from cli.render import clusters_table

    where = target(namesrv, access_key, secret_key, timeout_ms)
    rows = with_admin(where, lambda admin: _broker_rows(admin, cluster))
    if as_json:
        emit_json(rows)
    else:
        out().print(clusters_table(rows))


cluster_app.command("list")(clusters)


@cluster_app.command("rt")
@friendly
def cluster_rt(
    cluster: Annotated[str | None, typer.Option("--cluster", "-c", help="Only this cluster")] = None,
    amount: Annotated[
        int, typer.Option("--amount", "-a", min=1, max=1_000_000, help="Sends per broker")
    ] = 100,
    size: Annotated[int, typer.Option("--size", "-s", min=1, max=4 * 1024 * 1024, help="Body bytes")] = 128,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Average send round trip to every broker, each through its own topic (mqadmin clusterRT; one round)."""
    from rich.table import Table

    where = target(namesrv, access_key, secret_key, timeout_ms)
    rows = with_admin(where, lambda admin: admin.cluster_rt(cluster, amount, size))
    if as_json:
        emit_json(rows)
        return
    table = Table(title="Send RT", title_justify="left")
    for heading in ("Cluster", "Broker", "RT ms", "Success", "Failed"):
        table.add_column(heading, justify="left" if heading in ("Cluster", "Broker") else "right")
    for row in rows:
        table.add_row(
            cell(row.cluster),
            cell(row.broker_name),
            cell(f"{row.avg_rt_ms:.2f}"),
            cell(row.success),
            cell(row.failed),
        )
    out().print(table)


#: Where mqadmin's export commands write unless told otherwise.
DEFAULT_EXPORT_DIR = "/tmp/rocketmq/export"

ExportDir = Annotated[
    str, typer.Option("--file-path", "-f", help="Folder to write the JSON file into (created if missing)")
]


def _write_export(folder: str, name: str, document: object) -> Path:
    """The document pretty-printed (tab-indented, as fastjson's pretty format) into ``folder/name``."""
    path = params.store_dir(folder) / name
    path.write_text(json.dumps(document, ensure_ascii=False, indent="\t") + "\n", encoding="utf-8")
    return path


@cluster_app.command("export-metadata")
@friendly
def export_metadata(
    cluster: Annotated[
        str | None, typer.Option("--cluster", "-c", help="Every master of this cluster")
    ] = None,
    broker: Annotated[
        str | None, typer.Option("--broker", "-b", callback=params.broker_address, help="One broker")
    ] = None,
    topics_only: Annotated[bool, typer.Option("--topic", "-t", help="Only topics (topic.json)")] = False,
    groups_only: Annotated[
        bool, typer.Option("--group", "-g", help="Only groups (subscriptionGroup.json)")
    ] = False,
    special: Annotated[bool, typer.Option("--special-topic", "-s", help="Keep retry and DLQ topics")] = False,
    file_path: ExportDir = DEFAULT_EXPORT_DIR,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Write a cluster's (or broker's) user topics and groups to a JSON file (mqadmin exportMetadata)."""
    if (cluster is None) == (broker is None):
        raise CliError("pass either --cluster or --broker")
    if topics_only and groups_only:
        raise CliError("pass at most one of --topic and --group")
    where = target(namesrv, access_key, secret_key, timeout_ms)
    document = with_admin(
        where,
        lambda admin: admin.export_metadata(
            cluster=cluster,
            broker_addr=broker,
            topics=not groups_only,
            groups=not topics_only,
            special_topics=special,
        ),
    )
    name = "topic.json" if topics_only else "subscriptionGroup.json" if groups_only else "metadata.json"
    path = _write_export(file_path, name, document)
    if as_json:
        emit_json({"path": str(path), **document})
    else:
        out().print(cell(f"export {path} success"))


@cluster_app.command("export-configs")
@friendly
def export_configs(
    cluster: Annotated[str, typer.Option("--cluster", "-c", callback=params.not_blank, help="Cluster")],
    file_path: ExportDir = DEFAULT_EXPORT_DIR,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Write the cluster's broker settings and scale to configs.json (mqadmin exportConfigs)."""
    where = target(namesrv, access_key, secret_key, timeout_ms)
    document = with_admin(where, lambda admin: admin.export_configs(cluster))
    path = _write_export(file_path, "configs.json", document)
    if as_json:
        emit_json({"path": str(path), **document})
    else:
        out().print(cell(f"export {path} success"))


@cluster_app.command("export-metrics")
@friendly
def export_metrics(
    cluster: Annotated[str, typer.Option("--cluster", "-c", callback=params.not_blank, help="Cluster")],
    file_path: ExportDir = DEFAULT_EXPORT_DIR,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Write each master's rates, day counts, sizes and client versions to metrics.json (mqadmin
    exportMetrics)."""
    where = target(namesrv, access_key, secret_key, timeout_ms)
    document = with_admin(where, lambda admin: admin.export_metrics(cluster))
    path = _write_export(file_path, "metrics.json", document)
    if as_json:
        emit_json({"path": str(path), **document})
    else:
        out().print(cell(f"export {path} success"))

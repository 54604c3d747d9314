"""Entry point of ``rmq``: registers every sub-command.

``rmq --help`` groups the commands by what they act on (topic, group, message, broker, cluster, namesrv).
Every mqadmin command rmq has is also reachable under its mqadmin name (``rmq updateSubGroup ...``),
hidden from the help so that it stays readable; each command's own help names its mqadmin counterpart.

This is the one module that imports every command module: command modules never import one another, so
commands reachable under two names (``rmq consumer-progress`` and ``rmq group progress``) are registered
twice here.

The command modules import their heavy parts (clients, servers, tables) only when a command runs, and
:func:`main` has typer build the parser of the one command being called: every ``rmq`` call is a fresh
interpreter, and typer would otherwise read the signatures of every command (over a hundred, with the 72
mqadmin aliases) first.
"""

from __future__ import annotations

import copy
import io
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from cli import (
    acl_cmd,
    broker_admin_cmd,
    cluster_admin_cmd,
    group_cmd,
    kv_cmd,
    lite_cmd,
    message_cmd,
    topic_cmd,
    user_cmd,
)
from cli.acl_cmd import acl_app
from cli.broker_cmd import broker
from cli.cluster_admin_cmd import cluster_app, clusters
from cli.cluster_cmds import broker_config, broker_stats, route
from cli.consume_cmd import consume
from cli.consumer_cmds import consumer_connections, consumer_progress, reset_offset
from cli.errors import OneLineErrorsGroup
from cli.exporter_cmd import exporter
from cli.group_cmd import group_app
from cli.inspect_cmd import inspect
from cli.kv_cmd import kv_app
from cli.lite_cmd import lite_app
from cli.message_cmd import message_app
from cli.namesrv_cmd import namesrv
from cli.quickstart_cmd import quickstart
from cli.send_cmd import send
from cli.tls_options import TLS_CONFIG_ENV, TLS_ENV
from cli.top_cmd import top
from cli.topic_cmd import topic_app
from cli.version_opt import show_version

if TYPE_CHECKING:
    from typer.models import CommandInfo, TyperInfo

app = typer.Typer(
    name="rmq",
    cls=OneLineErrorsGroup,
    help="Apache RocketMQ from Python: a local cluster in one command, sending, administration, servers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

TOPIC, GROUP, MESSAGE, BROKER, CLUSTER, NAMESRV = "topic", "group", "message", "broker", "cluster", "namesrv"
START = "start"


@app.callback()
def _root(
    tls: bool = typer.Option(
        False,
        "--tls",
        envvar=TLS_ENV,
        help="Connect with TLS (Apache's tls.enable), for every command that talks to a cluster",
    ),
    tls_config: Path | None = typer.Option(
        None,
        "--tls-config",
        envvar=TLS_CONFIG_ENV,
        exists=True,
        dir_okay=False,
        readable=True,
        help="Apache's tls.properties for clients: tls.client.authServer, trust and client certificates",
    ),
    _version: bool = typer.Option(
        False,
        "--version",
        callback=show_version,
        is_eager=True,
        help="Print the version and the codec path in use (C accelerator or pure Python), then exit",
    ),
) -> None:
    """Apache RocketMQ from Python."""
    # The commands build their connections from the environment (as Apache's tools from -D properties).
    os.environ[TLS_ENV] = "true" if tls else "false"
    if tls_config is not None:
        os.environ[TLS_CONFIG_ENV] = str(tls_config)


# the group commands that were top-level before, under their group names too (after group_cmd's own)
group_app.command("progress")(consumer_progress)
group_app.command("connections")(consumer_connections)
group_app.command("reset-offset")(reset_offset)

app.command(rich_help_panel=TOPIC)(route)
app.add_typer(topic_app, name="topic", rich_help_panel=TOPIC)
app.add_typer(lite_app, name="lite", rich_help_panel=TOPIC)
app.add_typer(group_app, name="group", rich_help_panel=GROUP)
app.command("consumer-progress", rich_help_panel=GROUP)(consumer_progress)
app.command("consumer-connections", rich_help_panel=GROUP)(consumer_connections)
app.command("reset-offset", rich_help_panel=GROUP)(reset_offset)
app.command(rich_help_panel=MESSAGE)(send)
app.command(rich_help_panel=MESSAGE)(consume)
app.add_typer(message_app, name="message", rich_help_panel=MESSAGE)
app.command("broker-stats", rich_help_panel=BROKER)(broker_stats)
app.command("broker-config", rich_help_panel=BROKER)(broker_config)
app.command("update-broker-config", rich_help_panel=BROKER)(broker_admin_cmd.update_broker_config)
app.command("clean-expired-cq", rich_help_panel=BROKER)(broker_admin_cmd.clean_expired_cq)
app.command("delete-expired-commitlog", rich_help_panel=BROKER)(broker_admin_cmd.delete_expired_commitlog)
app.command("clean-unused-topic", rich_help_panel=BROKER)(broker_admin_cmd.clean_unused_topic)
app.command(rich_help_panel=BROKER)(broker)
app.add_typer(acl_app, name="acl", rich_help_panel=BROKER)
app.add_typer(user_cmd.user_app, name="user", rich_help_panel=BROKER)
app.command(rich_help_panel=CLUSTER)(clusters)
app.command(rich_help_panel=CLUSTER)(exporter)
app.command(rich_help_panel=CLUSTER)(top)
app.add_typer(cluster_app, name="cluster", rich_help_panel=CLUSTER)
app.command(rich_help_panel=NAMESRV)(namesrv)
app.add_typer(kv_app, name="kv", rich_help_panel=NAMESRV)
app.command(rich_help_panel=START)(quickstart)
app.command(rich_help_panel=START)(inspect)

#: mqadmin's command names -> the rmq command doing the same.
MQADMIN_ALIASES: dict[str, Callable[..., Any]] = {
    "clusterList": clusters,
    "topicRoute": route,
    "topicList": topic_cmd.list_topics,
    "updateTopic": topic_cmd.create,
    "deleteTopic": topic_cmd.delete,
    "topicStatus": topic_cmd.status,
    "topicClusterList": topic_cmd.clusters_of_topic,
    "updateTopicPerm": topic_cmd.update_perm,
    "updateOrderConf": topic_cmd.order_conf,
    "statsAll": topic_cmd.stats_all,
    "queryCq": topic_cmd.query_cq,
    "brokerStatus": broker_stats,
    "getBrokerConfig": broker_config,
    "updateBrokerConfig": broker_admin_cmd.update_broker_config,
    "cleanExpiredCQ": broker_admin_cmd.clean_expired_cq,
    "deleteExpiredCommitLog": broker_admin_cmd.delete_expired_commitlog,
    "cleanUnusedTopic": broker_admin_cmd.clean_unused_topic,
    "updateAclConfig": acl_cmd.update_account,
    "deleteAclConfig": acl_cmd.delete_account,
    "deleteAccessConfig": acl_cmd.delete_account,  # 4.9.8's alias of deleteAclConfig
    "updateGlobalWhiteAddr": acl_cmd.update_global_white,
    "clusterAclConfigVersion": acl_cmd.version,
    "createUser": user_cmd.create,
    "updateUser": user_cmd.update,
    "deleteUser": user_cmd.delete,
    "getUser": user_cmd.get,
    "listUser": user_cmd.list_users,
    "createAcl": acl_cmd.create_acl,
    "updateAcl": acl_cmd.update_acl,
    "deleteAcl": acl_cmd.delete_acl,
    "getAcl": acl_cmd.get_acl,
    "listAcl": acl_cmd.list_acls,
    "consumerProgress": consumer_progress,
    "consumerConnection": consumer_connections,
    "resetOffsetByTime": reset_offset,
    "updateSubGroup": group_cmd.update,
    "deleteSubGroup": group_cmd.delete,
    "getConsumerConfig": group_cmd.config,
    "consumerStatus": group_cmd.status,
    "cloneGroupOffset": group_cmd.clone_offset,
    "skipAccumulatedMessage": group_cmd.skip_accumulated,
    "brokerConsumeStats": group_cmd.broker_stats,
    "producerConnection": group_cmd.producers,
    "producer": group_cmd.producer_table,
    "allocateMQ": group_cmd.allocate,
    "wipeWritePerm": cluster_admin_cmd.wipe_write_perm,
    "addWritePerm": cluster_admin_cmd.add_write_perm,
    "getNamesrvConfig": cluster_admin_cmd.namesrv_config,
    "updateNamesrvConfig": cluster_admin_cmd.update_namesrv_config,
    "updateKvConfig": kv_cmd.put,
    "deleteKvConfig": kv_cmd.delete,
    "sendMessage": send,
    "queryMsgById": message_cmd.get,
    "queryMsgByKey": message_cmd.query,
    "queryMsgByUniqueKey": message_cmd.get,
    "queryMsgByOffset": message_cmd.at_offset,
    "printMsgByQueue": message_cmd.print_queue,
    "consumeMessage": message_cmd.consume_print,
    "printMsg": message_cmd.consume_print,
    "checkMsgSendRT": message_cmd.check_send_rt,
    "sendMsgStatus": message_cmd.send_status,
    "queryMsgTraceById": message_cmd.trace,
    "clusterRT": cluster_admin_cmd.cluster_rt,
    "exportMetadata": cluster_admin_cmd.export_metadata,
    "exportConfigs": cluster_admin_cmd.export_configs,
    "exportMetrics": cluster_admin_cmd.export_metrics,
    "getBrokerLiteInfo": lite_cmd.broker_info,
    "getParentTopicInfo": lite_cmd.parent_topic,
    "getLiteTopicInfo": lite_cmd.lite_topic,
    "getLiteGroupInfo": lite_cmd.lite_group,
    "getLiteClientInfo": lite_cmd.lite_client,
    "triggerLiteDispatch": lite_cmd.trigger_dispatch,
}
for _name, _command in MQADMIN_ALIASES.items():
    app.command(_name, hidden=True)(_command)


def _pruned(commands: list[CommandInfo], groups: list[TyperInfo]) -> typer.Typer:
    pruned = copy.copy(app)
    pruned.registered_commands = commands
    pruned.registered_groups = groups
    return pruned


def only(name: str) -> typer.Typer | None:
    """``app`` with only the command or command group called ``name`` (``None`` when there is none): all
    a call of that command needs. Its help, usage errors and output are the same as under ``app``."""
    commands = [
        c
        for c in app.registered_commands
        if c.callback is not None and (c.name or typer.main.get_command_name(c.callback.__name__)) == name
    ]
    groups = [g for g in app.registered_groups if g.name == name]
    return _pruned(commands, groups) if commands or groups else None


def app_for(args: Sequence[str]) -> typer.Typer:
    """What ``rmq ARGS`` needs: the command named first alone; for ``--help`` (or no arguments, or another
    option: the root group has none of its own) ``app`` without the hidden mqadmin aliases, which its help
    does not show; ``app`` itself for an unknown name, so that typos get the same suggestions."""
    if not args or args[0].startswith("-"):
        return _pruned([c for c in app.registered_commands if not c.hidden], app.registered_groups)
    return only(args[0]) or app


def _escape_unencodable_output() -> None:
    """Text from the network may hold what the terminal's encoding cannot show (a lone UTF-16 surrogate a
    JSON peer sent as ``"\\ud800"``): write it as a backslash escape instead of failing on it."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def main() -> None:
    _escape_unencodable_output()
    app_for(sys.argv[1:])()


if __name__ == "__main__":
    main()

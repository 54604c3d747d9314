"""Broker maintenance commands: ``rmq update-broker-config``, ``rmq clean-expired-cq``,
``rmq delete-expired-commitlog``, ``rmq clean-unused-topic`` (mqadmin updateBrokerConfig, cleanExpiredCQ,
deleteExpiredCommitLog, cleanUnusedTopic).

``rmq broker`` runs a broker, so these are top-level commands in the help's broker panel. Each walks one
broker or every broker of a cluster (of all clusters when none is named), with a progress bar.
"""

from __future__ import annotations

from typing import Annotated

import typer

from cli import params
from cli.brokers_run import report_done, walk_brokers
from cli.common import AccessKey, AsJson, Namesrv, SecretKey, TimeoutMs, target
from cli.errors import CliError, friendly
from cli.params import Broker, Cluster


@friendly
def update_broker_config(
    key: Annotated[str, typer.Option("--key", "-k", callback=params.not_blank, help="Setting (Java name)")],
    value: Annotated[str, typer.Option("--value", "-v", help="New value")],
    broker: Broker = None,
    cluster: Cluster = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Change a setting of running brokers: one, or every one of a cluster (mqadmin updateBrokerConfig)."""
    if broker is None and cluster is None:
        raise CliError("pass --broker or --cluster")
    where = target(namesrv, access_key, secret_key, timeout_ms)
    done = walk_brokers(
        where, broker, cluster, "updating", False, lambda a, addr: a.update_broker_config(addr, {key: value})
    )
    report_done(done, f"{key}={value}", as_json)


@friendly
def clean_expired_cq(
    broker: Broker = None,
    cluster: Cluster = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Drop consume queues pointing only at deleted commit-log files (mqadmin cleanExpiredCQ)."""
    where = target(namesrv, access_key, secret_key, timeout_ms)
    done = walk_brokers(
        where,
        broker,
        cluster,
        "cleaning",
        False,
        lambda a, addr: a.clean_expired_consume_queue(broker_addr=addr),
    )
    report_done(done, "clean expired consume queues", as_json)


@friendly
def delete_expired_commitlog(
    broker: Broker = None,
    cluster: Cluster = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Run commit-log retention now (mqadmin deleteExpiredCommitLog)."""
    where = target(namesrv, access_key, secret_key, timeout_ms)
    done = walk_brokers(
        where,
        broker,
        cluster,
        "deleting",
        False,
        lambda a, addr: a.delete_expired_commit_log(broker_addr=addr),
    )
    report_done(done, "delete expired commit log", as_json)


@friendly
def clean_unused_topic(
    broker: Broker = None,
    cluster: Cluster = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Drop consume queues of topics brokers no longer have (mqadmin cleanUnusedTopic)."""
    where = target(namesrv, access_key, secret_key, timeout_ms)
    done = walk_brokers(
        where, broker, cluster, "cleaning", False, lambda a, addr: a.clean_unused_topic(broker_addr=addr)
    )
    report_done(done, "clean unused topics", as_json)

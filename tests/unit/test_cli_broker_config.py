"""`rmq broker` settings: a broker.conf value stays unless the option is actually given."""

from __future__ import annotations

from pathlib import Path

from broker.config import BrokerRole
from cli.broker_cmd import FlushMode, build_config


def test_file_values_survive_options_left_out(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "brokerName=it-broker\nbrokerClusterName=ItCluster\nlistenPort=20911\nbrokerIP1=10.1.2.3\n"
    )
    config = build_config(tmp_path / "store", conf)
    assert (config.broker_name, config.broker_cluster_name, config.listen_port) == (
        "it-broker",
        "ItCluster",
        20911,
    )
    assert config.broker_ip1 == "10.1.2.3"


def test_given_options_win_over_the_file(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=it-broker\nflushDiskType=ASYNC_FLUSH\n")
    config = build_config(tmp_path / "s", conf, broker_name="other", flush=FlushMode.SYNC, port=0)
    assert (
        config.broker_name == "other" and config.flush_disk_type == "SYNC_FLUSH" and config.listen_port == 0
    )


def test_defaults_without_a_file(tmp_path: Path) -> None:
    config = build_config(tmp_path / "s", None, host="127.0.0.1")
    assert (config.broker_name, config.broker_cluster_name, config.listen_port) == (
        "broker-a",
        "DefaultCluster",
        10911,
    )
    assert config.broker_ip1 == "127.0.0.1" and config.auto_create_topic_enable


def test_replication_roles_and_ha_ports(tmp_path: Path) -> None:
    slave = build_config(
        tmp_path / "s", None, port=20911, broker_id=1, role=BrokerRole.SLAVE, ha_master="127.0.0.1:30912"
    )
    assert (slave.broker_role, slave.broker_id, slave.ha_master_address) == ("SLAVE", 1, "127.0.0.1:30912")
    assert slave.ha_port_to_bind(20911) == 20912, "without --ha-port, listenPort + 1 as Apache derives it"
    chosen = build_config(tmp_path / "s", None, port=20911, ha_port=40000, role=BrokerRole.SYNC_MASTER)
    assert chosen.ha_port_to_bind(20911) == 40000 and chosen.broker_role == "SYNC_MASTER"
    conf = tmp_path / "broker.conf"
    conf.write_text("haListenPort=31000\nbrokerRole=SYNC_MASTER\n")
    from_file = build_config(tmp_path / "s", conf, port=20911)
    assert from_file.ha_port_to_bind(20911) == 31000 and from_file.broker_role == "SYNC_MASTER"

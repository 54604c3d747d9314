"""Apache's Proxy (``rocketmq-proxy``) by release, in cluster mode in front of any cluster's NameServer.

``java -cp <rocketmq-proxy's jars> org.apache.rocketmq.proxy.ProxyStartup -pc FILE -pm cluster``. In cluster
mode the proxy holds no messages: it turns the gRPC SDKs' calls into remoting requests to the brokers it
finds through the NameServer (SEND_MESSAGE_V2, POP_MESSAGE, ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME,
END_TRANSACTION, QUERY_ASSIGNMENT, heartbeats, topic routes and configs), which makes it a demanding client
of a broker: every RocketMQ 5 feature goes through it. The proxy has no bind-address setting and listens on
every interface (as 4.x servers do); ``localServeAddr`` makes it announce loopback to its clients.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass

from tests.integration.apache import jvm, maven
from tests.integration.apache.releases import ApacheRelease
from tests.integration.clusters.launch import Launch
from tests.integration.clusters.processes import ManagedProcess, free_port

PROXY_MAIN = "org.apache.rocketmq.proxy.ProxyStartup"
PROXY_BOOT = re.compile(r"rocketmq-proxy startup successfully")
BOOT_TIMEOUT_S = 120.0
GRACE_S = 15.0


@dataclass(frozen=True)
class ProxyEndpoint:
    #: Where the gRPC SDKs connect (``host:port``).
    grpc: str
    #: The proxy's remoting port (the 4.x/5.x remoting clients may use it too).
    remoting: str
    process: ManagedProcess


def start_proxy(
    launch: Launch, release: ApacheRelease, namesrv_addr: str, cluster_name: str, name: str = "apache-proxy"
) -> ProxyEndpoint:
    """A proxy of ``release`` for the brokers of ``cluster_name`` registered at ``namesrv_addr``."""
    folder = launch.work_dir / name
    folder.mkdir(parents=True, exist_ok=True)
    user_home = launch.logs_dir / f"{name}-home"
    user_home.mkdir(parents=True, exist_ok=True)
    grpc_port, remoting_port = free_port(), free_port()
    settings = {
        "rocketMQClusterName": cluster_name,
        "namesrvAddr": namesrv_addr,
        "proxyMode": "cluster",
        "grpcServerPort": grpc_port,
        "remotingListenPort": remoting_port,
        "localServeAddr": "127.0.0.1",
    }
    config = folder / "rmq-proxy.json"
    config.write_text(json.dumps(settings), "utf-8")
    classpath = maven.classpath("proxy", release.version)
    argv = jvm.java_argv(
        "broker", classpath, PROXY_MAIN, ["-pc", str(config), "-pm", "cluster"], user_home=user_home
    )
    rmq_home = jvm.rocketmq_home(launch.work_dir / "rocketmq-home")
    process = launch.process(
        name, argv, env=jvm.java_env(rmq_home), cwd=folder, grace_s=GRACE_S, kill_on_discard=True
    )
    process.wait_for_output(PROXY_BOOT, time.monotonic() + BOOT_TIMEOUT_S)
    return ProxyEndpoint(f"127.0.0.1:{grpc_port}", f"127.0.0.1:{remoting_port}", process)

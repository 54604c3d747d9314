"""One integration suite against every real cluster we can get: the ``cluster`` fixture and its providers.

A scenario asks for ``cluster`` and gets a :class:`~.model.Cluster` -- ``namesrv`` ("host:port"),
``brokers`` (one, or two for the Apache-plus-project cluster; ``broker_name``/``broker_addr`` is the first),
``cluster_name``, ``provider`` (the test id), ``version`` ("python", "4.9.7", "5.3.3" …) and ``logs_dir``::

    async def test_send(cluster: Cluster) -> None:
        topic = unique_name("Send")
        async with Producer(unique_name("pg"), cluster.namesrv) as producer:
            await producer.send(Message(topic, b"hello"))
        [stored] = await read_topic(cluster.namesrv, topic, 1)

Providers (``ROCKETMQ_PROVIDERS=python,binaries,docker,mixed``; unset: all; see :mod:`.providers`):
``python`` (the project's servers as subprocesses), ``binaries`` (Apache's servers from Maven Central, see
:mod:`tests.integration.apache`), ``docker`` (the same in a locally built image, testcontainers) and ``mixed``
(Apache and project servers in one cluster). Unavailable ones skip with the missing thing as the reason.

Modules: ``processes`` (process groups, stop by pid, free ports), ``launch`` (what a start-up owns),
``configs`` (broker.conf settings shared by all brokers), ``python_servers``, ``apache_docker``,
``docker_image``, ``providers``, ``probe`` (cluster info, routes, readiness), ``readback`` (PULL_MESSAGE
read-back), ``fixture``.
"""

"""RocketMQ for the tests of applications built on this toolkit: a pytest plugin and a testcontainers module.

* :mod:`rocketmq_testing.plugin` -- registered with pytest through the package's ``pytest11`` entry point:
  the ``rocketmq_cluster`` fixtures (the embedded NameServer and Broker, or Apache's in a container with
  ``--rocketmq-image``). It costs nothing until a test asks for one of them.
* :mod:`rocketmq_testing.cluster` -- :class:`~rocketmq_testing.cluster.RocketMQCluster`, what those fixtures
  give: addresses, a ready producer and admin, topic creation, waiting for messages.
* :mod:`rocketmq_testing.containers` -- :class:`~rocketmq_testing.containers.RocketMQContainer`, Apache's
  NameServer and Broker in one container, in the shape of testcontainers' ``KafkaContainer``.

This package sits on top of the import layering (it starts servers and drives clients); nothing of the
toolkit imports it. Nothing is imported here, so that pytest loading the plugin loads no server or client.
See ``docs/testing.md``.
"""

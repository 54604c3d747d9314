"""Apache's C++ RocketMQ client (PyPI ``rocketmq`` 0.4.4) as an independent peer for integration tests.

The native client can crash or hang the process that hosts it, so it never runs inside pytest: ``peer.py``
drives it in a separate process and speaks JSON lines on stdout, and ``runner.py`` starts that process, feeds
it, parses what it says, enforces timeouts and always kills it (and its process group) by pid.
``fixtures.py`` holds the pytest fixture proposed for ``tests/integration/conftest.py``; ``fake_cluster.py``
is a scripted in-process NameServer + Broker for testing the harness itself without a RocketMQ server.

Typical use, with a NameServer at ``addr``::

    consumer = cpp_client.start_push_consumer(addr, "Group", "Topic", count=3)
    consumer.wait_for("ready")
    spec = cpp_client.message("hi {i}", tags="TagA")
    sent = cpp_client.send_sync(addr, "Topic", [spec], extra=["--count", "3"])
    assert [o.status for o in sent.check().send_results()] == ["SEND_OK"] * 3
    received = consumer.finish().check().messages()
"""

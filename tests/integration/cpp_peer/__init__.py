"""Apache's C++ RocketMQ client (PyPI ``rocketmq`` 0.4.4) as an independent peer for integration tests.

The native client can crash or hang the process that hosts it, so it never runs inside pytest: ``peer.py``
drives it in a separate process and speaks JSON lines on stdout, and ``runner.py`` starts that process, feeds
it, parses what it says, enforces timeouts and always kills it (and its process group) by pid.
``fixtures.py`` holds the pytest fixture proposed for ``tests/integration/conftest.py``.
"""

"""Apache's Java RocketMQ client as an independent test peer, like the C++ one.

The program (``tests/integration/java/src/rmqit/*.java``, the project's own code) is compiled with
``javac`` at test time against the ``rocketmq-tools`` + ``rocketmq-client`` jars of a release, resolved from
Maven Central into the suite's cache (:mod:`tests.integration.apache.maven`); the classes are cached there
too, keyed by the client version and the sources' contents. It speaks the JSON-lines protocol of
``tests/integration/cpp_peer/peer.py``, so :class:`~tests.integration.cpp_peer.runner.PeerClient` drives it.

Modules: ``build`` (compiling, the ``java`` command line, :class:`~build.JavaClient`, availability) and
``fixtures`` (the ``java_client`` factory fixture).
"""

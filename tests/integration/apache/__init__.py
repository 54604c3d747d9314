"""Apache RocketMQ itself as a test peer, by version, from Maven Central.

Nothing of Apache's is in the repository: ``tests/integration/java/pom.xml`` names the modules, Maven resolves
them into a cache outside the work tree, and this package starts them with ``java -cp``.

Modules: ``releases`` (which versions the suite runs, and which artifact versions each needs), ``cache``
(where resolved things live), ``maven`` (classpaths), ``jvm`` (the java command line: heap, Java 17 opens,
an ``ROCKETMQ_HOME`` of our own), ``servers`` (NameServer and Broker on a launch), ``mqadmin``.
"""

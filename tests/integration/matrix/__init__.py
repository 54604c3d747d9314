"""The compatibility matrix: clients × set-ups × operations × header serializations, every cell a test.

* clients: the project's Python API, ``rmq``, Apache's Java client, Apache's C++ client, the Go client and
  Apache's mqadmin (:mod:`.clients`: one adapter each, the same four operations);
* set-ups: the ``cluster`` fixture's providers (Apache alone, the project alone, each broker on the other's
  NameServer, both brokers in one cluster, Apache in Docker …);
* operations: ``send`` (acknowledged, then read back intact by an independent reader), ``route`` (the
  client's view of a topic's queues equals the NameServer's), ``clusters`` (brokers and addresses equal the
  set-up's), ``consume`` (every message the project sent received exactly once, intact);
* serializations: JSON and ROCKETMQ request headers.

A cell a client cannot be asked for (the C++ client has no route or cluster API and always writes JSON
headers) is listed as such by :func:`.cells.not_applicable` and in ``docs/compatibility.md``, never run as a
skip. :mod:`.report` collects outcomes into a table printed at the end of a run.
"""

"""Classic master/slave replication (Apache's ``HAService``, the default in 4.x and in 5.x without a
controller), wire- and file-compatible with Apache's so either side can be an Apache broker.

* :mod:`broker.ha.protocol` -- the HA link's framing, free of I/O;
* :mod:`broker.ha.master` -- the HA port, streaming the commit log to slaves, SYNC_MASTER waits;
* :mod:`broker.ha.slave` -- following a master's commit log byte for byte;
* :mod:`broker.ha.sync` -- a slave copying its master's topics, offsets and groups;
* :mod:`broker.ha.service` -- the broker's side of all this, by ``brokerRole``.
"""

from broker.ha.master import ReplicationMaster, SlaveLink
from broker.ha.protocol import HAProtocolError, ReportReader, Transfer, TransferReader
from broker.ha.service import HighAvailability
from broker.ha.slave import ReplicationSlave
from broker.ha.sync import SlaveSynchronizer

__all__ = [
    "HAProtocolError",
    "HighAvailability",
    "ReplicationMaster",
    "ReplicationSlave",
    "ReportReader",
    "SlaveLink",
    "SlaveSynchronizer",
    "Transfer",
    "TransferReader",
]

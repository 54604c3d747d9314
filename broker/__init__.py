"""The RocketMQ Broker role: stores messages and serves producers, consumers and admin tools.

:class:`Broker` speaks Apache RocketMQ's remoting protocol on one port, so Java, C++ and this project's
clients use it as they would an Apache broker; :class:`BrokerConfig` holds its settings under Apache's
names. The durable storage lives in :mod:`broker.store`.
"""

from broker.broker import Broker, BrokerNotStartedError
from broker.clock import Clock, ManualClock, SystemClock
from broker.config import BrokerConfig

__all__ = ["Broker", "BrokerConfig", "BrokerNotStartedError", "Clock", "ManualClock", "SystemClock"]

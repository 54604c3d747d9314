"""The RocketMQ Broker role: stores messages and serves producers, consumers and admin tools."""

"""What the connector raises, by who can fix it: the query's author (options, schema, row values) or the
cluster (sends and pulls that failed).

Option and schema errors are raised on the driver before any task runs; Spark shows them as the cause of
the ``AnalysisException`` (or the failed query), with the option or column named in the message.
"""

from __future__ import annotations


class ConnectorError(Exception):
    """Base of every error the RocketMQ connector raises itself."""


class OptionError(ConnectorError, ValueError):
    """An option is missing or has a value the connector cannot use; the message names the option."""


class SchemaError(ConnectorError, ValueError):
    """The DataFrame written has a column the sink does not know, lacks ``body``, or has a wrong type."""


class RowError(ConnectorError, ValueError):
    """A value in one row cannot become a message (null body, reserved property name, key with a space…);
    the message names the column and the row's position in its partition."""


class SinkSendError(ConnectorError):
    """A task could not have every message of its partition acknowledged; Spark retries the task, so rows
    acknowledged before the failure may be written twice (at-least-once)."""

    def __init__(self, message: str, *, acknowledged: int, failed: int) -> None:
        super().__init__(message)
        self.acknowledged = acknowledged
        self.failed = failed


class SourceReadError(ConnectorError):
    """Reading a queue failed: no route for the topic, a broker refused a pull, or it could not be reached."""


class DataLossError(SourceReadError):
    """Messages a query was about to read are gone (retention deleted them) and ``failOnDataLoss`` is true."""

    def __init__(
        self, topic: str, broker: str, queue_id: int, wanted: int, first_kept: int, *, during: str
    ) -> None:
        super().__init__(
            f"data loss on topic {topic!r}, broker {broker}, queue {queue_id}: the query's next offset is "
            f"{wanted} but the broker keeps offsets from {first_kept} on, so {max(first_kept - wanted, 0)} "
            f"message(s) were deleted (retention) before this query read them (found at {during}); "
            "set failOnDataLoss=false to skip ahead and count them instead"
        )
        self.topic = topic
        self.broker = broker
        self.queue_id = queue_id
        self.wanted = wanted
        self.first_kept = first_kept

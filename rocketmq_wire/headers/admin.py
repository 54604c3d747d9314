"""Headers of broker administration that are not about one topic or group.

GET_BROKER_RUNTIME_INFO and GET_BROKER_CONFIG requests have no header in Java (their answers are bodies);
only the config response carries a header, with the config's data version.
"""

from __future__ import annotations

import dataclasses

from rocketmq_wire.headers.base import CommandHeader, jstr


@dataclasses.dataclass(slots=True, kw_only=True)
class GetBrokerConfigResponseHeader(CommandHeader):
    """``version`` is the config's DataVersion as JSON, so a caller can tell whether it changed."""

    version: str | None = jstr("version", required=True)

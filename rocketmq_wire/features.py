"""The first Apache release whose broker serves each feature older brokers lack, as ``MQVersion`` numbers.

A client compares these with the version a broker puts on its answers (a heartbeat's, see
``client.instance.ClientInstance.broker_version``) before it uses the feature there, because an older broker
does not refuse what it cannot read: a 4.x broker stores a timer message and delivers it at once. Each value
was read from the release in which the feature's request code or property handling first appears.
"""

from __future__ import annotations

from typing import Final

from rocketmq_wire.codes import MQVersion

#: Timer messages (``TIMER_DELIVER_MS`` / ``TIMER_DELAY_MS`` / ``TIMER_DELAY_SEC``): the 5.0 timer wheel.
TIMER_MESSAGES: Final = MQVersion.value_of("V5_0_0")
#: RECALL_MESSAGE and the recall handle on send answers (``RecallMessageProcessor``, new in 5.3.2).
RECALL_MESSAGE: Final = MQVersion.value_of("V5_3_2")
#: Topic attributes (``message.type``, ``queue.type`` ...) in UPDATE_AND_CREATE_TOPIC and topic configs.
TOPIC_ATTRIBUTES: Final = MQVersion.value_of("V5_0_0")
#: POP_MESSAGE, ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME (``PopMessageProcessor``, new in 5.0.0).
POP_CONSUMPTION: Final = MQVersion.value_of("V5_0_0")
#: BATCH_ACK_MESSAGE (registered by the broker from 5.1.3 on).
BATCH_ACK: Final = MQVersion.value_of("V5_1_3")
#: The lite-topic admin reads (GET_BROKER_LITE_INFO ... TRIGGER_LITE_DISPATCH, ``LiteManagerProcessor``, new
#: in 5.5.0). An older broker answers them REQUEST_CODE_NOT_SUPPORTED; refusing first says why.
LITE_TOPIC: Final = MQVersion.value_of("V5_5_0")

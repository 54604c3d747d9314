"""POP consumption on the broker: checkpoints of what was handed out, acks, revive and long polling."""

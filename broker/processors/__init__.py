"""Request handlers of the broker: one module per area, one class per request code, as Apache's."""

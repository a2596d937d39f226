"""The shared core: errors, text I/O, limits, token counting, the model catalogue, findings
and the one instruction-injection detector."""

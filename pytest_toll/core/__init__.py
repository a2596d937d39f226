"""The shared core: errors, text I/O, limits (defaults and read caps), the secrets scrubber, a
whole-exchange deadline, token counting, the model catalogue, findings and the one
instruction-injection detector."""

"""The shared core: errors, text I/O, token counting, the model catalogue, findings."""

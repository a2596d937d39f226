"""The gate: the ledger, its kinds, the ratchet, settings and the session."""

"""Job 4, tolls: what tool results add to agent transcripts."""

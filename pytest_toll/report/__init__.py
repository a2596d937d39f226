"""The session report as data, and its renderings."""

# The one place the version is written: pyproject.toml reads it (dynamic version), and
# `toll --version`, the reports' tool_version, SARIF and the MCP client's info import it.
__version__ = "0.2.0"

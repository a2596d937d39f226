"""pytest-toll: measure what an LLM agent's surface costs in context tokens, and gate it.

Importing this package is cheap on purpose: the tokenizer, HTTP client and vocabulary are
loaded only when a measurement is made (``pytest`` without ``--toll`` pays nothing).
"""

from pytest_toll._version import __version__

__all__ = ["__version__"]

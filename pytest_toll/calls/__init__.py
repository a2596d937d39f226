"""Job 3, calls: one request measured part by part before it is sent.

The public entry points (``pytest_toll.calls.measure``, ``diff``, ``deferred_tools``) are
re-exported here; the work lives in the modules beside this one.
"""

from pytest_toll.calls.deferred import deferred_tools
from pytest_toll.calls.diffing import diff
from pytest_toll.calls.measuring import measure

__all__ = ["deferred_tools", "diff", "measure"]

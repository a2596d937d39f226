"""Our estimates held against Anthropic's own count (count_tokens), for ``--exact``.

``tools_delta`` is efaimo's ``--anthropic``: count_tokens of a probe request with and without
a server's tools, the difference being what the tools cost a Claude model exactly.
``NativeComparison`` says how far an estimate reads from a native count, and whether that is
beyond the tolerance (``core.limits.NATIVE_TOLERANCE``, 5%). ``ModelTotal`` holds a tool
list's total for one model: o200k, scaled, and native when asked.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_toll.calls.anthropic import CountTokensClient
from pytest_toll.calls.catalogues import anthropic_tool
from pytest_toll.core.limits import NATIVE_TOLERANCE
from pytest_toll.core.models import Scale
from pytest_toll.core.tokens import O200K, scaled_method
from pytest_toll.definitions.tools import Tool

#: The message both probe requests carry, so only the tools differ between them.
PROBE_MESSAGE = "."


@dataclass(frozen=True)
class NativeComparison:
    """An estimate against the provider's count of the same thing."""

    estimate: int
    native: int
    tolerance: float = NATIVE_TOLERANCE

    @property
    def difference(self) -> int:
        """Signed: positive when the estimate reads high."""
        return self.estimate - self.native

    @property
    def share(self) -> float | None:
        return None if self.native == 0 else abs(self.difference) / self.native

    @property
    def beyond(self) -> bool:
        share = self.share
        if share is None:  # a native zero: any estimate above it is beyond any tolerance
            return self.difference != 0
        return share > self.tolerance

    def describe(self) -> str:
        if self.difference == 0:
            return "our estimate matches the native count"
        direction = "high" if self.difference > 0 else "low"
        share = self.share
        shown = "of nothing" if share is None else f"{share:.1%}"
        side = "beyond" if self.beyond else "within"
        return (
            f"our estimate reads {direction} by {abs(self.difference):,} ({shown}) — "
            f"{side} {self.tolerance:.1%}"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "estimate": self.estimate,
            "native": self.native,
            "difference": self.difference,
            "share": None if self.share is None else round(self.share, 4),
            "tolerance": self.tolerance,
            "beyond": self.beyond,
        }


@dataclass(frozen=True)
class ToolsDelta:
    """count_tokens of the probe request without and with the tools."""

    model: str
    without_tools: int
    with_tools: int

    @property
    def tokens(self) -> int:
        return self.with_tools - self.without_tools

    def as_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "without_tools": self.without_tools,
            "with_tools": self.with_tools,
            "tokens": self.tokens,
            "source": "native",
        }


def tools_delta(client: CountTokensClient, model: str, tools: Sequence[Tool]) -> ToolsDelta:
    """What ``tools`` add to a request to ``model``, as Anthropic counts it."""
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "user", "content": PROBE_MESSAGE}],
    }
    without = client.count(body)
    with_tools = client.count({**body, "tools": [anthropic_tool(tool) for tool in tools]})
    return ToolsDelta(model, without, with_tools)


@dataclass(frozen=True)
class ModelTotal:
    """A tool list's claude total for one model (``toll weigh --model``): o200k, o200k×scale
    and, with ``--exact``, the native delta of the tools, each estimate held against it."""

    name: str
    scale: Scale
    o200k: int
    exact: ToolsDelta | None = None

    @property
    def scaled(self) -> int | None:
        return None if self.scale.factor == 1.0 else math.ceil(self.o200k * self.scale.factor)

    def comparisons(self) -> dict[str, NativeComparison]:
        if self.exact is None:
            return {}
        found = {O200K: NativeComparison(self.o200k, self.exact.tokens)}
        if self.scaled is not None:
            found[scaled_method(self.scale.factor)] = NativeComparison(
                self.scaled, self.exact.tokens
            )
        return found

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "scale": self.scale.as_dict()}
        data["o200k"] = self.o200k
        if self.scaled is not None:
            data["scaled"] = {"tokens": self.scaled, "method": scaled_method(self.scale.factor)}
        if self.exact is not None:
            data["exact"] = self.exact.as_dict()
            data["exact"]["comparisons"] = {
                method: comparison.as_dict() for method, comparison in self.comparisons().items()
            }
        return data

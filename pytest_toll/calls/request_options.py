"""What a request body carries beyond messages, system and tools: structured-output formats,
``tool_choice`` and thinking settings. Each is either counted or named as not counted — never
silently ignored.

The o200k estimate covers messages, system, skills and tools; it names every setting it
leaves out. Anthropic's count_tokens takes ``output_format``, ``tool_choice`` (with tools)
and ``thinking``: with ``exact`` they are counted by one more request (the whole request with
them, minus the whole request without them), shown beside the parts and never inside them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: The settings a request body may carry, and what each is.
SETTINGS: dict[str, str] = {
    "output_format": "a structured-output schema",
    "response_format": "OpenAI's structured-output format",
    "tool_choice": "which tool the model must call",
    "thinking": "extended-thinking settings",
}
#: The ones Anthropic's count_tokens takes, so a native count can include them.
NATIVE_SETTINGS = ("output_format", "tool_choice", "thinking")


def settings_in(body: Mapping[str, Any]) -> dict[str, Any]:
    """The settings a request body carries, in ``SETTINGS`` order."""
    return {name: body[name] for name in SETTINGS if body.get(name) is not None}


def natively_countable(settings: Mapping[str, Any], has_tools: bool) -> dict[str, Any]:
    """The settings count_tokens can count (``tool_choice`` only when there are tools)."""
    return {
        name: value
        for name, value in settings.items()
        if name in NATIVE_SETTINGS and (name != "tool_choice" or has_tools)
    }


@dataclass(frozen=True)
class SettingsCount:
    """The settings a request carried, which were counted, and their native tokens."""

    names: tuple[str, ...]
    counted: tuple[str, ...] = ()
    #: count_tokens of the request with them minus without them; None when not counted.
    tokens: int | None = None
    #: Whether count_tokens was asked (else the report is an estimate).
    exact: bool = False

    @property
    def not_counted(self) -> tuple[str, ...]:
        return tuple(name for name in self.names if name not in self.counted)

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"present": list(self.names), "counted": list(self.counted)}
        if self.tokens is not None:
            data["tokens"] = self.tokens
            data["source"] = "native"
        data["not_counted"] = list(self.not_counted)
        return data

    def notes(self, has_tools: bool) -> list[str]:
        """One line naming what was counted and one naming what was not, and why."""
        lines = []
        if self.counted and self.tokens is not None:
            lines.append(
                f"request settings counted by count_tokens, beside the total: "
                f"{', '.join(self.counted)} add {self.tokens:,} native tokens"
            )
        missing = self.not_counted
        if missing:
            described = ", ".join(f"{name} ({SETTINGS[name]})" for name in missing)
            why = _why_not(missing, self.exact, has_tools)
            lines.append(f"not counted: {described}; {why}")
        return lines


def _why_not(missing: Sequence[str], exact: bool, has_tools: bool) -> str:
    if not exact:
        return (
            "the estimate covers messages, system, skills and tools only (exact counts take "
            "output_format, tool_choice and thinking)"
        )
    reasons = []
    if "response_format" in missing:
        reasons.append("count_tokens does not take OpenAI's response_format")
    if "tool_choice" in missing and not has_tools:
        reasons.append("tool_choice without tools has nothing to choose")
    return "; ".join(reasons) or "count_tokens was not asked"

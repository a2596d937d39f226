"""GitHub Actions workflow commands and the step summary, rendered from plain data.

Two limits shape this module, both GitHub's:

- a step shows at most 10 error, 10 warning and 10 notice annotations (and a job 50); the
  rest are dropped silently, in print order. So annotations are printed worst first, capped
  per level, and one notice says how many were left out — a reader must never believe the
  list is complete when it is not;
- a step summary (``$GITHUB_STEP_SUMMARY``) may hold at most 1 MiB; above that GitHub drops
  the whole summary. The writer counts what other tools already appended in the same step.

Nothing here imports pytest; the plugin hands in rendered strings and plain annotations.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

AnnotationLevel = Literal["error", "warning", "notice"]
ANNOTATION_ERROR: Final = "error"
ANNOTATION_WARNING: Final = "warning"
ANNOTATION_NOTICE: Final = "notice"
LEVELS: tuple[AnnotationLevel, ...] = (ANNOTATION_ERROR, ANNOTATION_WARNING, ANNOTATION_NOTICE)

#: Annotations of one level GitHub shows per step.
ANNOTATIONS_PER_LEVEL = 10
#: GitHub rejects a step summary larger than this (it then shows none of it).
STEP_SUMMARY_LIMIT_BYTES = 1024 * 1024


def running_on_github(environ: Mapping[str, str] | None = None) -> bool:
    """Whether this process runs as a GitHub Actions step (the runner sets the variable)."""
    return (os.environ if environ is None else environ).get("GITHUB_ACTIONS") == "true"


def escape_data(text: str) -> str:
    """Escape a workflow command's message: the runner reads ``%0A`` back as a newline."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a property value, which additionally ends at ``,`` and at ``::``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


@dataclass(frozen=True)
class Annotation:
    """One ``::error`` / ``::warning`` / ``::notice`` line, pointing at a file line if known."""

    level: AnnotationLevel
    message: str
    title: str | None = None
    file: str | None = None
    line: int | None = None

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise ValueError(f"annotation level must be one of {', '.join(LEVELS)}")

    def render(self) -> str:
        properties = []
        if self.file:
            properties.append(f"file={escape_property(self.file)}")
            if self.line is not None and self.line > 0:
                properties.append(f"line={self.line}")
        if self.title:
            properties.append(f"title={escape_property(self.title)}")
        head = f"::{self.level} {','.join(properties)}" if properties else f"::{self.level}"
        return f"{head}::{escape_data(self.message)}"


def render_annotations(
    annotations: Iterable[Annotation], per_level: int = ANNOTATIONS_PER_LEVEL
) -> list[str]:
    """Workflow command lines: errors, then warnings, then notices, each capped at ``per_level``.

    Within a level the given order is kept (callers pass their most important first). When
    anything is left out, the last line is one notice counting it — so notices keep one slot
    free for it.
    """
    by_level: dict[str, list[Annotation]] = {level: [] for level in LEVELS}
    for annotation in annotations:
        by_level[annotation.level].append(annotation)
    must_drop = (
        len(by_level[ANNOTATION_ERROR]) > per_level or len(by_level[ANNOTATION_WARNING]) > per_level
    )
    notice_room = (
        per_level - 1 if must_drop or len(by_level[ANNOTATION_NOTICE]) > per_level else per_level
    )
    rooms = {
        ANNOTATION_ERROR: per_level,
        ANNOTATION_WARNING: per_level,
        ANNOTATION_NOTICE: notice_room,
    }
    left_out = {level: max(0, len(by_level[level]) - rooms[level]) for level in LEVELS}
    lines = [a.render() for level in LEVELS for a in by_level[level][: rooms[level]]]
    dropped = sum(left_out.values())
    if dropped:
        parts = [
            f"{count} {level}{'s' if count != 1 else ''}"
            for level, count in left_out.items()
            if count
        ]
        lines.append(
            Annotation(
                ANNOTATION_NOTICE,
                f"{dropped} more annotation{'s' if dropped != 1 else ''} left out "
                f"({', '.join(parts)}): GitHub shows {per_level} of each level per step. "
                "The step summary and the log list every entry.",
                title="pytest-toll",
            ).render()
        )
    return lines


def workspace_path(path: Path, environ: Mapping[str, str] | None = None) -> str:
    """``path`` as GitHub wants it in an annotation: relative to the checkout, ``/``-separated.

    Annotations only attach to a file in the pull request's diff when the path is relative to
    ``$GITHUB_WORKSPACE``; outside it the absolute path is the most honest thing to show.
    """
    env = os.environ if environ is None else environ
    resolved = path.resolve()
    for base in (env.get("GITHUB_WORKSPACE"), os.getcwd()):
        if base:
            try:
                return resolved.relative_to(Path(base).resolve()).as_posix()
            except ValueError:
                continue
    return resolved.as_posix()


def write_github_output(values: Mapping[str, str], path: Path) -> None:
    """Append ``name=value`` pairs to the step's output file in the delimiter form, which no
    value can break."""
    with path.open("a", encoding="utf-8", newline="\n") as file:
        for name, value in values.items():
            delimiter = f"toll_{secrets.token_hex(8)}"
            file.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")


def append_step_summary(markdown: str, path: Path) -> None:
    """Append ``markdown`` to the step summary file; the caller already sized it to fit."""
    with path.open("a", encoding="utf-8", newline="\n") as out:
        out.write(markdown if markdown.endswith("\n") else markdown + "\n")


def step_summary_room(path: Path, limit: int = STEP_SUMMARY_LIMIT_BYTES) -> int:
    """Bytes still free in this step's summary file (other tools may have appended already)."""
    try:
        used = path.stat().st_size
    except FileNotFoundError:
        used = 0
    return max(0, limit - used)

"""Where each agent keeps its sessions, and finding transcript files under folders.

With no ``--root``, a scan looks in every agent's own folder (``$HOME``, the XDG folders, and
VS Code's global storage on each platform); ``TOLL_TRANSCRIPTS`` still overrides them all.
Under a folder, ``*.jsonl`` files are transcripts as before (Claude Code, Codex and the
other JSON-lines formats); ``*.json`` and ``*.db`` files are kept only when a format claims
their content. A storage tree's message and part folders are not walked (their session file
reads them), and an event store is found once, by its first event.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from pytest_toll.core.limits import MAX_WALK_DEPTH
from pytest_toll.core.textio import is_regular_file
from pytest_toll.transcripts.formats import FORMATS, is_transcript, superseded
from pytest_toll.transcripts.formats.base import Home

#: A list of transcript files or folders (``os.pathsep`` between them) that replaces every
#: agent's own folders.
ENVIRONMENT_VARIABLE = "TOLL_TRANSCRIPTS"


def agent_roots(
    environ: Mapping[str, str] | None = None,
    home: Path | None = None,
    platform: str | None = None,
) -> list[tuple[str, Path]]:
    """``(agent, folder)`` for every place an agent may keep sessions (found or not), each
    format's folders (``Format.folders``) in the order of ``FORMATS``."""
    environ = os.environ if environ is None else environ
    home = home if home is not None else Path(environ.get("HOME") or Path.home())
    places = Home(
        path=home,
        config=Path(environ.get("XDG_CONFIG_HOME") or home / ".config"),
        data=Path(environ.get("XDG_DATA_HOME") or home / ".local" / "share"),
        platform=platform or sys.platform,
        environ=environ,
    )
    return [(format.name, folder) for format in FORMATS for folder in format.folders(places)]


def default_roots(environ: Mapping[str, str] | None = None, home: Path | None = None) -> list[Path]:
    """``TOLL_TRANSCRIPTS`` (an os.pathsep list) if set, else every agent's folder that exists."""
    environ = os.environ if environ is None else environ
    value = environ.get(ENVIRONMENT_VARIABLE, "")
    if value.strip():
        return [Path(part).expanduser() for part in value.split(os.pathsep) if part.strip()]
    found: dict[str, Path] = {}
    for _, root in agent_roots(environ, home):
        if root.is_dir():
            found.setdefault(str(root), root)
    return list(found.values())


def _is_storage_tree(folder: Path, names: list[str]) -> bool:
    return "session" in names and ("part" in names or "message" in names)


def _candidate(path: Path) -> bool:
    if path.suffix == ".jsonl":
        # Unless a fuller copy sits beside it (Antigravity's transcript_full.jsonl).
        return not superseded(path)  # (each format's hook looks at the name first)
    # (A Cline task's ui_messages.json is read beside its API history, not on its own.)
    return path.suffix in (".json", ".db") and is_transcript(path)


def _first_events_only(names: list[str]) -> list[str]:
    """An event store's files without all but its first event (which stands for them all)."""
    events = [name for name in names if name.endswith(".json") and name[:-5].isdigit()]
    if not events:
        return names
    first = min(events, key=lambda name: int(name[:-5]))
    return [name for name in names if name not in events or name == first]


def discover(roots: list[Path]) -> list[Path]:
    """Every transcript file under the roots (files are taken as given), deduplicated."""
    found: dict[str, Path] = {}
    for root in roots:
        if root.is_file():
            found.setdefault(str(root.resolve()), root)
            continue
        if not root.is_dir():
            continue
        top = len(root.parts)
        for folder, directories, files in os.walk(root):
            here = Path(folder)
            if len(here.parts) - top >= MAX_WALK_DEPTH:
                directories[:] = []  # a bound on a hostile tree; real stores are shallow
            if _is_storage_tree(here, directories):
                directories[:] = [name for name in directories if name not in ("part", "message")]
            directories.sort()
            if here.name == "events":
                files = _first_events_only(files)
            for name in sorted(files):
                path = here / name
                # A regular file first: a FIFO is never opened to see what it holds.
                if is_regular_file(path) and _candidate(path):
                    found.setdefault(str(path.resolve()), path)
    return sorted(found.values())

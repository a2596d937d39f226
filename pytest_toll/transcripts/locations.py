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

from pytest_toll.transcripts import formats
from pytest_toll.transcripts.formats import cline
from pytest_toll.transcripts.readers import ENVIRONMENT_VARIABLE

#: VS Code and its forks whose global storage may hold Cline or Roo Code tasks.
VSCODE_VARIANTS = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")
#: The extensions whose tasks are Cline-format transcripts.
CLINE_EXTENSIONS = ("saoudrizwan.claude-dev", "rooveterinaryinc.roo-cline")


def _vscode_user_folders(home: Path, environ: Mapping[str, str], platform: str) -> list[Path]:
    if platform == "darwin":
        base = home / "Library" / "Application Support"
    elif platform.startswith("win"):
        base = Path(environ.get("APPDATA") or home / "AppData" / "Roaming")
    else:
        base = Path(environ.get("XDG_CONFIG_HOME") or home / ".config")
    folders = [base / variant / "User" for variant in VSCODE_VARIANTS]
    folders += [
        home / ".vscode-server" / "data" / "User",
        home / ".cursor-server" / "data" / "User",
    ]
    return folders


def agent_roots(
    environ: Mapping[str, str] | None = None,
    home: Path | None = None,
    platform: str | None = None,
) -> list[tuple[str, Path]]:
    """``(agent, folder)`` for every place an agent may keep sessions (found or not)."""
    environ = os.environ if environ is None else environ
    home = home if home is not None else Path(environ.get("HOME") or Path.home())
    platform = platform or sys.platform
    config = Path(environ.get("XDG_CONFIG_HOME") or home / ".config")
    data = Path(environ.get("XDG_DATA_HOME") or home / ".local" / "share")
    codex = Path(environ.get("CODEX_HOME") or home / ".codex")
    gemini = home / ".gemini"
    roots: list[tuple[str, Path]] = [
        ("claude", home / ".claude" / "projects"),
        ("claude", config / "claude" / "projects"),
        ("codex", codex / "sessions"),
        ("gemini", gemini / "tmp"),
        ("antigravity", gemini / "antigravity" / "brain"),
        ("antigravity", gemini / "antigravity-cli" / "brain"),
        ("antigravity", gemini / "antigravity-ide" / "brain"),
        ("opencode", data / "opencode"),
        ("copilot", home / ".copilot" / "session-state"),
        ("qwen", home / ".qwen" / "projects"),
        ("qwen", home / ".qwen" / "tmp"),
        ("cline", home / ".cline" / "data" / "tasks"),
        ("openhands", home / ".openhands" / "sessions"),
        ("openhands", home / ".openhands-state" / "sessions"),
        ("cursor", home / ".cursor" / "projects"),
    ]
    if platform == "darwin":
        roots.append(("opencode", home / "Library" / "Application Support" / "opencode"))
    for user in _vscode_user_folders(home, environ, platform):
        for extension in CLINE_EXTENSIONS:
            roots.append(("cline", user / "globalStorage" / extension / "tasks"))
    return roots


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
        return True
    if path.suffix not in (".json", ".db"):
        return False
    detection = formats.detect(path)
    # A Cline task's ui_messages.json is read beside its API history, not on its own.
    return detection.claimed and not (detection.name == cline.NAME and cline.superseded(path))


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
        for folder, directories, files in os.walk(root):
            here = Path(folder)
            if _is_storage_tree(here, directories):
                directories[:] = [name for name in directories if name not in ("part", "message")]
            directories.sort()
            if here.name == "events":
                files = _first_events_only(files)
            for name in sorted(files):
                path = here / name
                if _candidate(path) and path.is_file():
                    found.setdefault(str(path.resolve()), path)
    return sorted(found.values())

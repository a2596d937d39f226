"""Every pin's history, read from the ledger's own git log — no state file of our own.

Each commit that touched the ledger (``git log --follow``, so a renamed or moved ledger keeps
its history) is read back with ``git show COMMIT:PATH`` and loaded with the ledger's own
loader. Per entry (``servers::notes``, ``skills::pdf``, ``tests::…``, ``calls::…``,
``transcripts``) the points are (commit, date, pin), oldest first. A version that does not
load (broken YAML, a schema error, a duplicate key) is skipped and counted, never fatal: a
history is what it is, and one bad commit must not hide the rest.

The pin of a skill is the sum of its three level pins (what its entry is gated on in total);
the pin of ``transcripts`` is its ``waste_ratio_pin``. Git runs as a subprocess with an
argument list, never through a shell.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import CouldNotJudge, UsageError
from pytest_toll.core.kinds import KINDS
from pytest_toll.gate.ledger import ledger_from_text
from pytest_toll.gate.ratchet import pins_of

# Separators git never puts in a hash, a date or (in practice) a path.
_RECORD = "\x1e"
_FIELD = "\x1f"
_TIMEOUT = 60.0


@dataclass(frozen=True)
class Point:
    """One pin as one commit left it."""

    commit: str
    date: str
    pin: int | float

    def as_dict(self) -> dict[str, Any]:
        return {"commit": self.commit, "date": self.date, "pin": self.pin}


@dataclass(frozen=True)
class Version:
    """The ledger as one commit left it: ``text`` is None when the commit deleted it."""

    commit: str
    date: str
    path: str
    text: str | None


@dataclass
class Trend:
    """Per entry label, its points oldest first; ``skipped`` lists (commit, why)."""

    ledger: str
    entries: dict[str, list[Point]] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    commits: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": "trend",
            "ledger": self.ledger,
            "commits": self.commits,
            "entries": {
                label: [point.as_dict() for point in points]
                for label, points in self.entries.items()
            },
            "skipped": len(self.skipped),
            "skipped_commits": [{"commit": commit, "why": why} for commit, why in self.skipped],
        }


def _git(directory: Path, *arguments: str) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(directory), *arguments],
            capture_output=True,
            timeout=_TIMEOUT,
            check=False,
        )
    except FileNotFoundError:
        raise CouldNotJudge("the git executable was not found on PATH") from None
    except subprocess.TimeoutExpired:
        raise CouldNotJudge(f"git {arguments[0]} took longer than {_TIMEOUT:g} s") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise CouldNotJudge(f"git {arguments[0]} failed: {message[0] if message else '?'}")
    return done.stdout.decode("utf-8", "replace")


def ledger_history(path: Path, since: str | None = None) -> Iterator[Version]:
    """Each version of the ledger at ``path``, newest first, following renames."""
    directory = path.parent if path.parent.is_dir() else Path.cwd()
    if not directory.is_dir():
        raise UsageError(f"{path}: its folder does not exist")
    try:
        prefix = _git(directory, "rev-parse", "--show-prefix").strip()
    except CouldNotJudge as error:
        raise CouldNotJudge(f"{path}: not in a git repository ({error})") from None
    try:
        _git(directory, "rev-parse", "--verify", "--quiet", "HEAD")
    except CouldNotJudge:
        raise CouldNotJudge(f"{path}: no commit touched it (the repository has none)") from None
    # --first-parent: the history of this branch as merges landed on it. A merged branch's
    # own commits carry the dates they were written, so listed among the branch's they would
    # interleave pins that never stood on it (a stale side branch's 492 after main's 488).
    arguments = [
        "log",
        "--follow",
        "--first-parent",
        f"--format={_RECORD}%H{_FIELD}%cI",
        "--name-status",
    ]
    if since:
        arguments.append(f"--since={since}")
    log = _git(directory, *arguments, "--", path.name)
    # Walking newest to oldest, a rename's old name is the path of every older commit.
    current = prefix + path.name
    for record in log.split(_RECORD)[1:]:
        header, _, changes = record.partition("\n")
        commit, _, date = header.partition(_FIELD)
        deleted = False
        older_name = current
        for line in changes.splitlines():
            fields = line.split("\t")
            if len(fields) < 2:
                continue
            status = fields[0]
            current = fields[-1]
            deleted = status.startswith("D")
            older_name = fields[1] if status.startswith(("R", "C")) else current
        text = None if deleted else _show(directory, commit, current)
        yield Version(commit, date.strip(), current, text)
        current = older_name


def _show(directory: Path, commit: str, path: str) -> str:
    # ``COMMIT:PATH`` reads PATH from the repository root, as ``git log`` names it.
    return _git(directory, "show", f"{commit}:{path}")


def pins_by_entry(data: Mapping[str, Any]) -> dict[str, int | float]:
    """Each entry's total pin in one loaded ledger, by report label."""
    pins: dict[str, int | float] = {}
    for kind in KINDS:
        section = data.get(kind)
        if not isinstance(section, Mapping):
            continue
        if kind == "transcripts":
            ratio = section.get("waste_ratio_pin")
            if isinstance(ratio, (int, float)) and not isinstance(ratio, bool):
                pins[kind] = ratio
            continue
        for name, entry in section.items():
            if isinstance(entry, Mapping):
                pin, _ = pins_of(kind, entry)
                if pin is not None:
                    pins[f"{kind}::{name}"] = pin
    return pins


def trend(path: str | Path, since: str | None = None) -> Trend:
    """The history of every pin in the ledger at ``path``; nothing in history is an error."""
    ledger = Path(path)
    result = Trend(str(ledger))
    versions = list(ledger_history(ledger, since))
    if not versions:
        raise CouldNotJudge(
            f"{ledger}: no commit touched it" + (f" since {since}" if since else "")
        )
    for version in reversed(versions):
        result.commits += 1
        if version.text is None:
            continue
        try:
            loaded = ledger_from_text(
                version.text,
                Path(f"{version.commit[:12]}:{version.path}"),
                allow_duplicate_decisions=True,
            )
        except UsageError as error:
            result.skipped.append((version.commit, str(error)))
            continue
        for label, pin in pins_by_entry(loaded.data).items():
            result.entries.setdefault(label, []).append(Point(version.commit, version.date, pin))
    # Report order: kind as the session report orders it, then first appearance.
    order = {kind: rank for rank, kind in enumerate(KINDS)}
    result.entries = dict(
        sorted(result.entries.items(), key=lambda item: order.get(item[0].split("::")[0], 99))
    )
    return result

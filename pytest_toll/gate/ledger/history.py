"""Every pin's history, read from the ledger's own git log — no state file of our own.

Each commit that touched the ledger (``git log --follow``, so a renamed or moved ledger keeps
its history) is read back with ``git show COMMIT:PATH`` and loaded with the ledger's own
loader. Per entry (``servers::notes``, ``skills::pdf``, ``tests::…``, ``calls::…``,
``transcripts``) the points are (commit, date, pin), oldest first. A version that does not
load (broken YAML, a schema error, a duplicate key) is skipped and counted, never fatal: a
history is what it is, and one bad commit must not hide the rest.

The pin of a skill is the sum of its three level pins (what its entry is gated on in total);
the pin of ``transcripts`` is its ``waste_ratio_pin``. Git runs through
:mod:`pytest_toll.core.git`, with every program the repository's config could name (hooks,
fsmonitor, pagers, signature verifiers, diff drivers, transports) switched off; paths
travel NUL-separated (``-z``), so any name works; a version's size is asked before its bytes,
and one over the ledger's size limit is skipped unread.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_toll.core import git
from pytest_toll.core.errors import CouldNotJudge, UsageError
from pytest_toll.core.kinds import KINDS
from pytest_toll.core.limits import GIT_HISTORY_TIMEOUT, LEDGER_MAX_BYTES
from pytest_toll.core.textio import decode_text, describe_size
from pytest_toll.gate.ledger import ledger_from_text
from pytest_toll.gate.ratchet import pins_of

#: Separates one commit's record from the next in ``git log``'s output; git never puts it in
#: a hash or a date, and with ``-z`` a path is ended by NUL, so no path can forge one.
_RECORD = "\x1e"
_FIELD = "\x1f"


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
    """The ledger as one commit left it: ``text`` is None when the commit deleted it or
    when it was not read (``unread`` says why: too large, not text)."""

    commit: str
    date: str
    path: str
    text: str | None
    unread: str | None = None


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


def _git_bytes(directory: Path, *arguments: str) -> bytes:
    done = git.run(arguments, directory, timeout=GIT_HISTORY_TIMEOUT)
    if done.returncode != 0:
        raise CouldNotJudge(f"git {arguments[0]} failed: {done.first_error_line}")
    return done.stdout


def _git(directory: Path, *arguments: str) -> str:
    # surrogateescape: a path that is not UTF-8 goes back to git as the same bytes
    return _git_bytes(directory, *arguments).decode("utf-8", "surrogateescape")


def ledger_history(path: Path, since: str | None = None) -> Iterator[Version]:
    """Each version of the ledger at ``path``, newest first, following renames."""
    directory = path.parent if path.parent.is_dir() else Path.cwd()
    if not directory.is_dir():
        raise UsageError(f"{path}: its folder does not exist")
    try:
        prefix = _git(directory, "rev-parse", "--show-prefix").strip("\n")
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
        "-z",
        "--no-show-signature",
        "--no-textconv",
        "--no-ext-diff",
        "--no-color",
        "--no-relative",
        f"--format={_RECORD}%H{_FIELD}%cI",
        "--name-status",
    ]
    if since:
        arguments.append(f"--since={since}")
    log = _git(directory, *arguments, "--", path.name)
    # Walking newest to oldest, a rename's old name is the path of every older commit.
    current = prefix + path.name
    for record in log.split(_RECORD)[1:]:
        header, _, changes = record.partition("\0")
        commit, _, date = header.partition(_FIELD)
        deleted = False
        older_name = current
        for status, paths in _changes(changes):
            current = paths[-1]
            deleted = status.startswith("D")
            older_name = paths[0] if status.startswith(("R", "C")) else current
        if deleted:
            yield Version(commit, date.strip(), current, None)
        else:
            yield _read_version(directory, commit, date.strip(), current)
        current = older_name


def _changes(text: str) -> Iterator[tuple[str, list[str]]]:
    """``--name-status -z`` pairs: a status, then one path (two for a rename or copy)."""
    fields = text.lstrip("\n").split("\0")
    index = 0
    while index < len(fields) and fields[index]:
        status = fields[index]
        count = 2 if status.startswith(("R", "C")) else 1
        paths = fields[index + 1 : index + 1 + count]
        if len(paths) < count:
            return
        yield status, paths
        index += 1 + count


def _read_version(directory: Path, commit: str, date: str, path: str) -> Version:
    """The ledger's text at ``commit``, once its size is known to be within the ledger's
    limit: an old commit's huge file is skipped unread, at no memory cost."""
    # ``COMMIT:PATH`` reads PATH from the repository root, as ``git log`` names it.
    blob = f"{commit}:{path}"
    size = int(_git(directory, "cat-file", "-s", blob).strip())
    if size > LEDGER_MAX_BYTES:
        why = (
            f"{commit[:12]}:{path}: {size:,} bytes, larger than the "
            f"{describe_size(LEDGER_MAX_BYTES)} ledger limit; not read"
        )
        return Version(commit, date, path, None, unread=why)
    data = _git_bytes(directory, "cat-file", "blob", blob)
    try:
        text = decode_text(data, f"{commit[:12]}:{path}")
    except CouldNotJudge as error:
        return Version(commit, date, path, None, unread=str(error))
    return Version(commit, date, path, text)


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
        if version.unread is not None:
            result.skipped.append((version.commit, version.unread))
            continue
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

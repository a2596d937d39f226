"""Every pin's history, read from the ledger's own git log — no state file of our own.

Each commit that touched the ledger (``git log --follow``, so a renamed or moved ledger keeps
its history) is read back with ``git show COMMIT:PATH`` and loaded with the ledger's own
loader. Per entry (``servers::notes``, ``skills::pdf``, ``tests::…``, ``calls::…``,
``transcripts``) the points are (commit, date, pin), oldest first. A version that does not
load (broken YAML, a schema error, a duplicate key) is skipped and counted, never fatal: a
history is what it is, and one bad commit must not hide the rest.

The pin of a skill is the sum of its three level pins (what its entry is gated on in total);
the pin of ``transcripts`` is its ``waste_ratio_pin``. Git runs as a subprocess with an
argument list, never through a shell, and with every program the repository's config could
name (hooks, fsmonitor, pagers, signature verifiers, diff drivers, transports) switched off;
paths travel NUL-separated (``-z``), so any name works; a version's size is asked before its
bytes, and one over the ledger's size limit is skipped unread.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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

# Git runs on a repository toll does not trust: one cloned from anyone, unpacked from an
# archive, left by another user. Its .git/config may name programs git runs on its behalf;
# these settings (given with -c, which outranks every config file) leave none to run while
# the history is read with rev-parse, log and cat-file:
_NEUTRAL_CONFIG = (
    # index refresh asks a file-system monitor hook; hooks are run from this folder
    "core.fsmonitor=false",
    f"core.hooksPath={os.devnull}",
    # a pager (global or per command) runs as a program; none is wanted with piped output
    "core.pager=cat",
    "pager.log=false",
    "pager.show=false",
    "pager.cat-file=false",
    "pager.rev-parse=false",
    # showing a signed commit's signature runs the verifier: gpg, gpgsm, ssh-keygen
    "log.showSignature=false",
    "gpg.program=false",
    "gpg.openpgp.program=false",
    "gpg.x509.program=false",
    "gpg.ssh.program=false",
    "gpg.ssh.defaultKeyCommand=false",
    # diffs may run an external diff, a driver's command or its textconv
    "diff.external=",
    # a partial clone fetches missing objects lazily over a transport (ssh, a remote's
    # uploadpack command, a remote helper): refused, so no transport program starts
    "protocol.allow=never",
    "core.sshCommand=false",
    # git may start housekeeping in the background (gc, maintenance) after a command
    "gc.auto=0",
    "maintenance.auto=false",
    # settings that change the bytes parsed here: colour codes, paths relative to the
    # folder, quoted paths, a log re-encoded into another character set
    "color.ui=never",
    "diff.relative=false",
    "core.quotePath=false",
    "i18n.logOutputEncoding=UTF-8",
    "log.mailmap=false",
)
_NEUTRAL_ENVIRONMENT = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    # the same refusal of lazy fetches, for git 2.44 and later
    "GIT_NO_LAZY_FETCH": "1",
    # reading takes no optional lock and writes no refreshed index
    "GIT_OPTIONAL_LOCKS": "0",
    # a ledger named with * or :( is a file name, not a pattern
    "GIT_LITERAL_PATHSPECS": "1",
}
#: Variables of the caller's environment that would run a program or redirect the read.
_DROPPED_VARIABLES = ("GIT_EXTERNAL_DIFF", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_ASKPASS")


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
    command = ["git", "--no-pager"]
    for setting in _NEUTRAL_CONFIG:
        command += ["-c", setting]
    environment = {k: v for k, v in os.environ.items() if k not in _DROPPED_VARIABLES}
    environment.update(_NEUTRAL_ENVIRONMENT)
    try:
        done = subprocess.run(
            [*command, "-C", str(directory), *arguments],
            capture_output=True,
            timeout=GIT_HISTORY_TIMEOUT,
            check=False,
            env=environment,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise CouldNotJudge("the git executable was not found on PATH") from None
    except subprocess.TimeoutExpired:
        raise CouldNotJudge(
            f"git {arguments[0]} took longer than {GIT_HISTORY_TIMEOUT:g} s"
        ) from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise CouldNotJudge(f"git {arguments[0]} failed: {message[0] if message else '?'}")
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

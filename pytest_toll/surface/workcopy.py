"""The temporary copy ``toll fix --surface`` edits and measures, and the write-back of
exactly what it reported (:mod:`pytest_toll.surface.relocate`).

The copy holds the repository's files read through the Files door (regular files inside
the repository, under the skill-file size cap; a symlinked file stays a link inside the
copy, so a file reached twice is still one file; an uncommitted ``CLAUDE.local.md`` is left
out, as the measure of the repository leaves it out). Each edited file's first text is
remembered, with its line endings and BOM, so the edits are known exactly and written back
in the file's own shape.
"""

from __future__ import annotations

import os
from pathlib import Path

from pytest_toll.core.errors import CouldNotJudge, UsageError
from pytest_toll.core.limits import MAX_SKILL_FILE_BYTES
from pytest_toll.core.textio import (
    decode_text,
    is_inside,
    is_regular_file,
    read_inside_root,
    walk_inside,
    writable_inside,
    write_atomically,
)
from pytest_toll.surface.files import SKIPPED_DIRECTORIES, relative
from pytest_toll.surface.memory import committed
from pytest_toll.surface.relocate_report import FileWrite, SurfaceFix

_BOM = b"\xef\xbb\xbf"


class Copy:
    """The repository's files in a temporary folder: edited and measured there, never in
    the repository; each file's first text remembered, so the edits are known exactly."""

    def __init__(self, root: Path, into: Path) -> None:
        self.root = root
        self.path = into
        self.notes: list[str] = []
        #: Each touched file's text in the repository (None: it did not exist).
        self.original: dict[str, str | None] = {}
        #: Per file: written with CRLF line endings, with a BOM.
        self.shape: dict[str, tuple[bool, bool]] = {}
        real_root = os.path.realpath(root)
        for path in walk_inside(root, root, skip=SKIPPED_DIRECTORIES):
            name = relative(path, root)
            target = into / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if path.is_symlink():
                # Kept a link (inside the copy), so a file reached twice is still one file.
                real = os.path.realpath(path)
                if is_inside(real, real_root):
                    os.symlink(
                        os.path.relpath(into / relative(real, real_root), target.parent), target
                    )
                continue
            if path.name == "CLAUDE.local.md" and not committed(root, path):
                continue  # each user's own: the measure of the repository leaves it out too
            try:
                data = read_inside_root(path, root, MAX_SKILL_FILE_BYTES)
            except CouldNotJudge as error:
                self.notes.append(f"not copied, so not measured: {error}")
                continue
            target.write_bytes(data)  # bytes read through the door, into our own temp folder

    def text(self, name: str) -> str | None:
        """The current text of ``name`` in the copy (newlines as ``\\n``), or None."""
        path = self.path / name
        if not is_regular_file(path):
            return None
        data = read_inside_root(path, self.path, MAX_SKILL_FILE_BYTES)
        text = decode_text(data, name)
        self.shape.setdefault(name, ("\r\n" in text, data.startswith(_BOM)))
        return text.replace("\r\n", "\n").replace("\r", "\n")

    def write(self, name: str, text: str | None) -> None:
        """Write ``text`` to ``name`` in the copy (None removes it), remembering the first."""
        if name not in self.original:
            self.original[name] = self.text(name)
        path = self.path / name
        if text is None:
            if path.exists():
                path.unlink()
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, self.on_disk(name, text))

    def on_disk(self, name: str, text: str) -> str:
        crlf, bom = self.shape.get(name, (False, False))
        text = text.replace("\n", "\r\n") if crlf else text
        return ("\ufeff" + text) if bom else text

    def snapshot(self) -> dict[str, str | None]:
        return {name: self.text(name) for name in self.original}

    def restore(self, snapshot: dict[str, str | None]) -> None:
        for name in list(self.original):
            self.write(name, snapshot.get(name, self.original[name]))

    def writes(self) -> tuple[FileWrite, ...]:
        found = []
        for name in sorted(self.original):
            before, after = self.original[name], self.text(name)
            if after is not None and after != before:
                found.append(FileWrite(name, before, after))
        return tuple(found)


def write_fix(root: Path, fix: SurfaceFix) -> SurfaceFix:
    """Write exactly ``fix``'s files under ``root``, each atomically, after checking them
    all: a path that leaves the repository, a symlink, or a file whose text is no longer
    what was measured is a ``UsageError`` and nothing is written."""
    root = Path(root)
    for write in fix.writes:
        target = writable_inside(root, write.path)
        now = None
        if os.path.lexists(target):
            data = read_inside_root(target, root, MAX_SKILL_FILE_BYTES)
            now = decode_text(data, write.path).replace("\r\n", "\n").replace("\r", "\n")
        if now != write.before:
            raise UsageError(f"{write.path}: changed since it was measured; nothing written")
    for write in fix.writes:
        target = root / write.path
        target.parent.mkdir(parents=True, exist_ok=True)
        text = write.after
        if write.before is not None:
            data = read_inside_root(target, root, MAX_SKILL_FILE_BYTES)
            if b"\r\n" in data:
                text = text.replace("\n", "\r\n")
            if data.startswith(_BOM):
                text = "\ufeff" + text
        write_atomically(target, text)
    return SurfaceFix(fix.root, fix.moves, fix.totals, fix.cut, fix.writes, fix.notes, True)

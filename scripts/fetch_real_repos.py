"""Rebuild ``tests/fixtures/real_repos/``: the files ``toll init`` reads, from public repositories.

The acceptance test (``tests/gate/test_real_repos.py``) runs ``toll init`` and the gate on
these copies; CI has no network, so the copies are committed and this script is the record
of how they were made. For each repository in :data:`REPOS` (at the commit recorded there)
it copies the root licence, every MCP config file, and up to ``skills`` skill folders
(taken in turn from each place skills live, so every layout stays represented) with their
text files, within the size caps below; ``MANIFEST.yaml`` lists what was copied.

    python scripts/fetch_real_repos.py --checkouts DIR   # DIR/<owner>+<name>/ are checkouts
    python scripts/fetch_real_repos.py --clone           # git clone each at its commit
    python scripts/fetch_real_repos.py --checkouts DIR --sweep   # init + gate on each whole
                                                         # checkout, those not copied too

Only repositories under a permissive licence (MIT, Apache-2.0, BSD) are copied; a skill
with its own licence file is copied only when that licence is permissive too.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pytest_toll.gate.discovery import server_files, skill_group, walk

HERE = Path(__file__).resolve().parent.parent
FIXTURES = HERE / "tests" / "fixtures" / "real_repos"

#: (repository, commit, licence, at most this many skills)
REPOS: tuple[tuple[str, str, str, int], ...] = (
    ("0h-n0/auto-research", "23fd148e4382a081caf2a989a53d8bcc344ab8b0", "MIT", 16),
    ("anthropics/skills", "9d2f1ae187231d8199c64b5b762e1bdf2244733d", "Apache-2.0 (per skill)", 8),
    ("anthropics/claude-plugins-official", "340e33aef211d95769d252324854497af871dafe", "Apache-2.0", 14),
    ("d-kimuson/claude-code-viewer", "9367cf006be9965c954e6cd36526f2195dce67ea", "MIT", 3),
    ("github/awesome-copilot", "ab7544d03d4c49fdd07f5958e1888ad39c4118e2", "MIT", 10),
    ("K-Dense-AI/claude-scientific-skills", "899a51bfbd63218153b272c9459dcb4a7ae88da6", "MIT", 8),
    ("langchain-ai/deepagents", "23b83ad50f63d241d0069a3dc426d43b211adf2e", "MIT", 14),
    ("modelcontextprotocol/servers", "76d64c822f5125032f89eb71dbdb94e42b434821", "MIT / Apache-2.0", 0),
    ("obra/superpowers", "44c9b2d6e889982ac18c27d05a19fefe335194e1", "MIT", 14),
    ("openai/openai-agents-python", "7f7a44f8dc0650296bd5ab6c745c9bcbaa6ac3b7", "MIT", 18),
    ("wshobson/agents", "367cb6a4a182cf7e9b0a17c9429f7411ddd9cf35", "MIT", 12),
)  # fmt: skip

#: Repositories tried on a whole checkout but not copied (their licence is not permissive, or
#: they hold nothing for toll init): ``--sweep`` runs them too.
NOT_COPIED: tuple[tuple[str, str, str], ...] = (
    ("getsentry/sentry-mcp", "4a109327ef3cc3b20b36ac18edbce68d37010565", "FSL-1.1"),
    ("trailofbits/skills", "293fb74c3151cceda32a85a545fe8acd67f8f5c6", "CC-BY-SA-4.0"),
    ("hashicorp/agent-skills", "146815e19decbb28252eebcf4125054e0a8783f1", "MPL-2.0"),
    ("vercel-labs/agent-skills", "b9c8ee0643d87d3c5a953d1e22382ff2ead39229", "none given"),
    (
        "microsoft/playwright-mcp",
        "7e0457a7cbf88823bf0146d12c46ae12c6818247",
        "Apache-2.0 (nothing for toll init)",
    ),
)

TEXT_SUFFIXES = frozenset(
    ".md .txt .json .yaml .yml .toml .py .sh .js .mjs .ts .html .css .csv .xml .ini .cfg".split()
)
FILE_CAP = 32_000  # bytes: a bigger file is left out (the skill then misses it)
SKILL_CAP = 90_000  # bytes per skill folder
LICENCE_NAMES = ("LICENSE", "LICENSE.md", "LICENSE.txt", "COPYING")
PERMISSIVE = ("MIT License", "Apache License", "BSD ", "Permission is hereby granted")


def _permissive(path: Path) -> bool:
    try:
        head = path.read_text(encoding="utf-8", errors="replace")[:2000]
    except OSError:
        return False
    return any(word in head for word in PERMISSIVE)


def _allowed(folder: Path) -> bool:
    """A skill with its own licence file is copied only when that licence is permissive."""
    own = next((folder / n for n in LICENCE_NAMES if (folder / n).is_file()), None)
    return own is None or _permissive(own)


def _spread(skills: list[str], limit: int) -> list[str]:
    """Up to ``limit`` skills, taken in turn from each group so every layout is kept."""
    groups: dict[str, list[str]] = {}
    for relative in skills:
        groups.setdefault(skill_group(relative), []).append(relative)
    chosen: list[str] = []
    while len(chosen) < limit and any(groups.values()):
        for members in groups.values():
            if members and len(chosen) < limit:
                chosen.append(members.pop(0))
    return sorted(chosen)


def _copy(source: Path, target: Path) -> int:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return source.stat().st_size


def copy_repo(checkout: Path, target: Path, limit: int) -> dict[str, object]:
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    copied: dict[str, object] = {}
    root_permissive = False
    for name in LICENCE_NAMES:
        if (checkout / name).is_file():
            _copy(checkout / name, target / name)
            copied["licence_file"] = name
            root_permissive = _permissive(checkout / name)
            break
    tree = walk(checkout)
    configs = [relative for relative, _ in server_files(tree)]
    for relative in configs:
        _copy(checkout / relative, target / relative)
    skills = []
    for relative in _spread([s for s in tree.skill_folders if _allowed(checkout / s)], limit):
        folder = checkout / relative
        own = next((folder / n for n in LICENCE_NAMES if (folder / n).is_file()), None)
        if not (_permissive(own) if own is not None else root_permissive):
            continue
        size = 0
        for file in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
            keep = (
                file.name == "SKILL.md"
                or file.name in LICENCE_NAMES
                or (file.suffix.lower() in TEXT_SUFFIXES and file.stat().st_size <= FILE_CAP)
            )
            if keep and (file.name == "SKILL.md" or size + file.stat().st_size <= SKILL_CAP):
                size += _copy(file, target / file.relative_to(checkout))
        skills.append(relative)
    copied["mcp_configs"] = configs
    copied["skills"] = skills
    copied["skills_in_repository"] = len(tree.skill_folders)
    return copied


def _checkout(repo: str, commit: str, checkouts: Path | None, scratch: Path) -> Path:
    if checkouts is not None:
        return checkouts / repo.replace("/", "+")
    folder = scratch / repo.replace("/", "+")
    subprocess.run(["git", "clone", "-q", f"https://github.com/{repo}", str(folder)], check=True)
    subprocess.run(["git", "-C", str(folder), "checkout", "-q", commit], check=True)
    return folder


def _manifest(rows: list[dict[str, object]]) -> str:
    import json

    lines = [
        "# The real repositories tests/gate/test_real_repos.py runs toll init and the gate on.",
        "# Made by scripts/fetch_real_repos.py; only the files toll init reads are copied.",
        "repositories:",
    ]
    for row in rows:
        lines.append(f"  - repo: {row['repo']}")
        for key in ("commit", "licence", "licence_file", "skills_in_repository"):
            if key in row:
                lines.append(f"    {key}: {json.dumps(row[key])}")
        for key in ("mcp_configs", "skills"):
            values = row.get(key)
            assert isinstance(values, list)
            lines.append(f"    {key}:" + ("" if values else " []"))
            lines += [f"      - {json.dumps(value)}" for value in values]
    return "\n".join(lines) + "\n"


def sweep(checkouts: Path) -> int:
    """The first run a new user makes, on each whole checkout (also those not copied):
    ``toll init``, then ``pytest --toll toll.yaml``; one line per repository."""
    failed = 0
    every = [(repo, commit) for repo, commit, _, _ in REPOS] + [
        (repo, commit) for repo, commit, _ in NOT_COPIED
    ]
    for repo, _ in every:
        folder = checkouts / repo.replace("/", "+")
        (folder / "toll.yaml").unlink(missing_ok=True)
        init = subprocess.run(
            [sys.executable, "-m", "pytest_toll", "init"], cwd=folder, capture_output=True
        )
        gate = None
        if init.returncode == 0:
            gate = subprocess.run(
                [sys.executable, "-m", "pytest", "--toll", "toll.yaml", "-p", "no:cacheprovider"],
                cwd=folder,
                capture_output=True,
            ).returncode
        # Exit 2 from init is "nothing to measure": right for a repository without any.
        failed += init.returncode not in (0, 2) or gate not in (None, 0)
        print(f"{repo}: toll init exit {init.returncode}, pytest --toll toll.yaml exit {gate}")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--checkouts", type=Path, help="folder of <owner>+<name> checkouts")
    where.add_argument("--clone", action="store_true", help="git clone each repository")
    parser.add_argument(
        "--sweep",
        action="store_true",
        help="with --checkouts: run toll init and the gate on each whole checkout instead",
    )
    args = parser.parse_args(argv)
    if args.sweep:
        if args.checkouts is None:
            parser.error("--sweep needs --checkouts")
        return sweep(args.checkouts)
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as scratch:
        for repo, commit, licence, limit in REPOS:
            checkout = _checkout(repo, commit, args.checkouts, Path(scratch))
            copied = copy_repo(checkout, FIXTURES / repo.replace("/", "__"), limit)
            rows.append({"repo": repo, "commit": commit, "licence": licence, **copied})
            skills, configs = copied["skills"], copied["mcp_configs"]
            assert isinstance(skills, list) and isinstance(configs, list)
            print(f"{repo}: {len(skills)} skill(s), {len(configs)} config(s)")
    (FIXTURES / "MANIFEST.yaml").write_text(_manifest(rows), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

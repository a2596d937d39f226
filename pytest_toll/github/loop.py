"""The GitHub loop after ``pytest --toll``: action outputs, the sticky pull-request comment,
the ratchet pull request and the badge branch. The composite action calls these through
``toll github STEP``; each is plain Python over files, git and :mod:`pytest_toll.github.api`.

- **outputs**: ``verdict`` (passed / failed / could-not-judge), ``fixed-cost``,
  ``ledger-changed`` and the report paths, appended to ``$GITHUB_OUTPUT``;
- **comment**: one comment per pull request and ledger, found again by a hidden marker and
  updated in place on every push, never a second — but only a marked comment the token
  itself wrote (``GET /user``; the Actions token is ``github-actions[bot]``): anyone can copy
  the marker, and a copy is left alone while a new comment is created. A fork's read-only token (or any 401/403/
  404) skips it with a notice: the gate's verdict stands either way;
- **ratchet**: when ``--toll-update`` lowered pins, the ledger is committed (without touching
  the checkout) onto ``toll/ratchet``, force-pushed (only over a tip the loop wrote itself:
  never the base, the default branch or anyone's commit), and its pull request opened or
  updated;
  when nothing can drop, an open ratchet pull request is closed and the branch deleted, so a
  stale pin can never be merged;
- **badge**: the SVG and shields endpoint JSON force-pushed as the only commit of a branch.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from pytest_toll.core import git as core_git
from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.secrets import scrub
from pytest_toll.core.textio import json_within_depth, read_file_bytes, read_text
from pytest_toll.github.api import GitHub, GitHubError
from pytest_toll.report import github as actions
from pytest_toll.report.markdown_fit import fit_markdown

PASSED = "passed"
FAILED = "failed"
COULD_NOT_JUDGE = "could-not-judge"
#: pytest's exit codes for "tests ran": 0 all passed, 1 some failed.
_RAN = (0, 1)
MARKER = "<!-- pytest-toll:comment {key} -->"
COMMENT_LIMIT = 65_536
RATCHET_TITLE = "toll: lower the pins that improved"
BADGE_TITLE = "toll: the context-cost badge"
BOT_NAME = "github-actions[bot]"
BOT_EMAIL = "41898282+github-actions[bot]@users.noreply.github.com"
BADGE_FILES = ("toll-badge.svg", "toll-badge.json")


def notice(
    message: str, stream: TextIO, level: actions.AnnotationLevel = actions.ANNOTATION_NOTICE
) -> None:
    # Our own workflow command: past the CLI's guard, which shows any other line that reads
    # as one as text. The annotation escapes what it quotes itself.
    out = getattr(stream, "unguarded", stream)
    out.write(scrub(actions.Annotation(level, message, title="pytest-toll").render()) + "\n")


# --- outputs ----------------------------------------------------------------------------


def load_report(path: Path | None) -> dict[str, Any] | None:
    if path is None or not path.is_file():
        return None
    try:
        loaded = json_within_depth(read_file_bytes(path))
    except (CouldNotJudge, ValueError):
        return None
    return loaded if isinstance(loaded, dict) else None


def verdict(report: Mapping[str, Any] | None, exit_code: int) -> str:
    """A budget or pin broken is ``failed``; no report, a crash or an unmeasured entry (with
    nothing broken) is ``could-not-judge``; else pytest's own exit code decides."""
    if report is None or exit_code not in _RAN:
        return COULD_NOT_JUDGE
    entries = report.get("entries", [])
    if any(e.get("failed") and e.get("outcome") != "error" for e in entries):
        return FAILED
    if any(e.get("outcome") == "error" for e in entries):
        return COULD_NOT_JUDGE
    return PASSED if exit_code == 0 else FAILED


def git(
    args: Sequence[str],
    cwd: Path,
    env: Mapping[str, str] | None = None,
    *,
    remote: str | None = None,
) -> str:
    """A git call that must succeed (reaching ``remote`` when given), through
    :mod:`pytest_toll.core.git`."""
    return core_git.output(args, cwd, env=env, remote=remote)


def ledger_changed(ledger: Path) -> bool:
    """Whether the ledger differs from the checked-out commit (or is new). A missing ledger
    is an error: ``git diff`` on a missing path would quietly say "unchanged"."""
    if not ledger.is_file():
        raise CouldNotJudge(
            f"{ledger}: no ledger there (the action's `ledger` input is relative to its "
            "`working-directory`)"
        )
    # Compared by hash, not with ``git status``: status may run a clean filter the
    # repository's attributes and config name; ``--no-filters`` runs none.
    cwd = ledger.parent
    now = git(["hash-object", "--no-filters", "--", ledger.name], cwd)
    prefix = git(["rev-parse", "--show-prefix"], cwd)
    done = core_git.run(["rev-parse", "--verify", "--quiet", f"HEAD:{prefix}{ledger.name}"], cwd)
    return done.returncode != 0 or done.text.strip() != now


def outputs(
    report_path: Path | None,
    exit_code: int,
    ledger: Path,
    reports: Mapping[str, str],
) -> dict[str, str]:
    report = load_report(report_path)
    fixed = "" if report is None else str((report.get("fixed_cost") or {}).get("tokens", ""))
    try:
        changed = "true" if ledger_changed(ledger) else "false"
    except CouldNotJudge:
        changed = "true" if report is not None and report.get("ledger_written") else "false"
    return {
        "verdict": verdict(report, exit_code),
        "fixed-cost": fixed,
        "ledger-changed": changed,
        **{name: path for name, path in reports.items() if path},
    }


# --- the sticky comment ------------------------------------------------------------------


def event(environ: Mapping[str, str]) -> Mapping[str, Any]:
    path = environ.get("GITHUB_EVENT_PATH")
    if not path or not Path(path).is_file():
        return {}
    loaded = json_within_depth(read_file_bytes(path))
    return loaded if isinstance(loaded, dict) else {}


def pull_request(environ: Mapping[str, str]) -> tuple[int, bool] | None:
    """``(number, from_a_fork)`` on a pull-request event, else None."""
    data = event(environ)
    pull = data.get("pull_request")
    if not isinstance(pull, Mapping) or "number" not in pull:
        return None
    head_repo = (pull.get("head") or {}).get("repo") or {}
    base_repo = (pull.get("base") or {}).get("repo") or data.get("repository") or {}
    from_fork = head_repo.get("full_name") != base_repo.get("full_name")
    return int(pull["number"]), from_fork


def comment_body(markdown: str, key: str) -> str:
    marker = MARKER.format(key=key)
    room = COMMENT_LIMIT - len(marker) - 1
    # Cut at a block boundary (never inside a table row or a code fence), after scrubbing.
    return f"{marker}\n{fit_markdown(scrub(markdown), room)}"


def sticky_comment(api: GitHub, number: int, body: str) -> tuple[str, int]:
    """Update the comment carrying ``body``'s marker line that this token wrote, or create
    one: ``(verb, id)``. Anyone can write the marker into a comment of their own; editing
    theirs would publish the report (and whatever they wrote above it) under their name."""
    marker = body.split("\n", 1)[0]
    login: str | None = None
    for comment in api.comments(number):
        if not str(comment.get("body", "")).startswith(marker):
            continue
        if login is None:
            login = api.login()  # asked once, and only when a marked comment exists
        if _author(comment) == login.casefold():
            updated = api.update_comment(int(comment["id"]), body)
            return "updated", int(updated.get("id", comment["id"]))
    created = api.create_comment(number, body)
    return "created", int(created["id"])


def _author(comment: Mapping[str, Any]) -> str | None:
    """A comment's author login, case-folded as GitHub compares logins; None when the
    comment names none (a deleted account), which matches no token."""
    user = comment.get("user")
    login = user.get("login") if isinstance(user, Mapping) else None
    return login.casefold() if isinstance(login, str) and login else None


def comment(markdown: Path, key: str, environ: Mapping[str, str], stream: TextIO) -> int:
    """Post or refresh the pull request's report comment; every refusal is a notice, exit 0."""
    found = pull_request(environ)
    if found is None:
        notice("not a pull request event: no comment", stream)
        return 0
    number, from_fork = found
    if from_fork:
        notice(
            f"pull request #{number} comes from a fork, whose token cannot comment: the "
            "report is in the job summary; the gate still decides",
            stream,
        )
        return 0
    if not markdown.is_file():
        notice(f"{markdown}: no Markdown report to post", stream, actions.ANNOTATION_WARNING)
        return 0
    try:
        api = GitHub.from_environment(environ)
        verb, comment_id = sticky_comment(api, number, comment_body(read_text(markdown), key))
    except GitHubError as error:
        level: actions.AnnotationLevel = (
            actions.ANNOTATION_NOTICE if error.forbidden else actions.ANNOTATION_WARNING
        )
        notice(f"no pull-request comment: {error}", stream, level)
        return 0
    stream.write(f"pytest-toll: {verb} comment {comment_id} on pull request #{number}\n")
    return 0


# --- pushing only to the loop's own branches --------------------------------------------

#: The trailer of every commit the loop writes. A branch whose tip lacks it is not the loop's
#: (a person's branch, the base, a branch someone pushed onto): it is never pushed to.
TRAILER = "Written-by: pytest-toll"


def _message(title: str) -> str:
    return f"{title}\n\n{TRAILER}"


def _remote_tip(remote: str, branch: str, cwd: Path) -> str | None:
    """The commit ``branch`` points at on ``remote``; None when there is no such branch."""
    ref = f"refs/heads/{branch}"
    for line in git(["ls-remote", "--heads", remote, ref], cwd, remote=remote).splitlines():
        commit, _, name = line.partition("\t")
        if name == ref:
            return commit
    return None


def _protected(remote: str, cwd: Path, base: str | None) -> set[str]:
    """Branches the loop never pushes to: the base, the remote's default branch, the branch
    checked out here."""
    names = {base} if base else set()
    for line in git(["ls-remote", "--symref", remote, "HEAD"], cwd, remote=remote).splitlines():
        if line.startswith("ref: refs/heads/") and line.endswith("\tHEAD"):
            names.add(line[len("ref: refs/heads/") : -len("\tHEAD")])
    current = core_git.run(["symbolic-ref", "--quiet", "--short", "HEAD"], cwd)
    if current.returncode == 0 and current.text.strip():
        names.add(current.text.strip())
    return names


def _written_by_us(cwd: Path, commit: str, legacy_title: str) -> bool:
    """Whether ``commit`` (fetched) carries the loop's trailer; or is one an earlier version
    wrote (its exact title, the bot as author), so an existing proposal stays updatable."""
    raw = git(["cat-file", "commit", commit], cwd)
    header, _, message = raw.partition("\n\n")
    if TRAILER in message.splitlines():
        return True
    return message.strip() == legacy_title and f"<{BOT_EMAIL}>" in header


def claim_branch(
    branch: str, *, remote: str, cwd: Path, base: str | None, title: str
) -> str | None:
    """The tip of ``branch`` on ``remote`` that the loop may replace (None: no such branch
    yet). CouldNotJudge when the loop may not push there: the branch is the base, the
    remote's default or the one checked out, or its tip is a commit the loop did not write.
    """
    if not branch or branch in _protected(remote, cwd, base):
        raise CouldNotJudge(
            f"refusing to push to {branch or 'an unnamed branch'}: it is the base branch, the "
            "remote's default branch or the one checked out; name a branch of its own"
        )
    tip = _remote_tip(remote, branch, cwd)
    if tip is None:
        return None
    git(["fetch", "--quiet", "--no-tags", "--depth=1", remote, f"refs/heads/{branch}"], cwd,
        remote=remote)  # fmt: skip
    if not _written_by_us(cwd, tip, title):
        raise CouldNotJudge(
            f"refusing to push to {branch}: its tip {tip[:12]} was not written by pytest-toll "
            f"(no '{TRAILER}' trailer); it is someone's branch. Name another branch, or "
            "delete this one if it is a stale proposal"
        )
    return tip


def push(commit: str, branch: str, tip: str | None, *, remote: str, cwd: Path) -> None:
    """Replace ``branch`` on ``remote`` with ``commit`` only if it still points at ``tip``
    (or, with no tip, does not exist): a commit pushed there since the check is never
    overwritten."""
    lease = f"--force-with-lease=refs/heads/{branch}:{tip or ''}"
    git(["push", "--quiet", lease, remote, f"{commit}:refs/heads/{branch}"], cwd, remote=remote)


# --- the ratchet -------------------------------------------------------------------------


def _commit_file(ledger: Path, message: str) -> str:
    """A commit on top of HEAD whose only change is the ledger, made in a scratch index so
    the checkout and its index stay as they are."""
    cwd = ledger.parent
    prefix = git(["rev-parse", "--show-prefix"], cwd)
    blob = git(["hash-object", "-w", "--no-filters", "--", ledger.name], cwd)
    with tempfile.TemporaryDirectory() as scratch:
        index = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        git(["read-tree", "HEAD"], cwd, index)
        git(
            ["update-index", "--add", "--cacheinfo", f"100644,{blob},{prefix}{ledger.name}"],
            cwd,
            index,
        )
        tree = git(["write-tree"], cwd, index)
    author = {
        "GIT_AUTHOR_NAME": BOT_NAME,
        "GIT_AUTHOR_EMAIL": BOT_EMAIL,
        "GIT_COMMITTER_NAME": BOT_NAME,
        "GIT_COMMITTER_EMAIL": BOT_EMAIL,
    }
    return git(["commit-tree", tree, "-p", "HEAD", "-m", _message(message)], cwd, author)


def ratchet(
    ledger: Path,
    *,
    branch: str,
    base: str,
    body: str,
    api: GitHub,
    stream: TextIO,
    remote: str = "origin",
) -> str:
    """Propose the lowered pins, or retire a proposal gone stale. Returns what it did.

    Only a branch the loop wrote is pushed to, or deleted (:func:`claim_branch`)."""
    changed = ledger_changed(ledger)
    tip = claim_branch(branch, remote=remote, cwd=ledger.parent, base=base, title=RATCHET_TITLE)
    open_pulls = api.open_pulls(branch, base)
    if not changed:
        if not open_pulls:
            stream.write("pytest-toll: no pin can be lowered; nothing to propose\n")
            return "nothing"
        for pull in open_pulls:
            api.create_comment(
                int(pull["number"]),
                f"Closed by pytest-toll: `{base}` no longer measures below its pins, so "
                "these lower pins would fail the gate. A later improvement opens a new one.",
            )
            api.update_pull(int(pull["number"]), state="closed")
        if tip is not None:
            api.delete_branch(branch)
        stream.write(
            f"pytest-toll: nothing can drop; closed #{', #'.join(str(p['number']) for p in open_pulls)}"
            f" and deleted {branch}\n"
        )
        return "closed"
    commit = _commit_file(ledger, RATCHET_TITLE)
    push(commit, branch, tip, remote=remote, cwd=ledger.parent)
    if open_pulls:
        number = int(open_pulls[0]["number"])
        api.update_pull(number, body=body)
        stream.write(f"pytest-toll: pull request #{number} now carries the lowered pins\n")
        return "updated"
    created = api.create_pull(branch, base, RATCHET_TITLE, body)
    stream.write(f"pytest-toll: opened pull request #{created['number']} with the lowered pins\n")
    return "opened"


# --- the badge branch --------------------------------------------------------------------


def publish_badge(svg: Path, branch: str, cwd: Path, stream: TextIO, remote: str = "origin") -> str:
    """Force-push the badge SVG and its endpoint JSON as the only commit of ``branch`` (only
    a branch the loop wrote: :func:`claim_branch`); nothing is pushed when the branch
    already holds the same two files."""
    endpoint = svg.with_suffix(".json")
    for path in (svg, endpoint):
        if not path.is_file():
            raise CouldNotJudge(f"{path}: no badge to publish (give the action a `badge` path)")
    with tempfile.TemporaryDirectory() as scratch:
        index = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        for name, path in zip(BADGE_FILES, (svg, endpoint)):
            blob = git(["hash-object", "-w", "--no-filters", "--", str(path.resolve())], cwd)
            git(["update-index", "--add", "--cacheinfo", f"100644,{blob},{name}"], cwd, index)
        tree = git(["write-tree"], cwd, index)
    tip = claim_branch(branch, remote=remote, cwd=cwd, base=None, title=BADGE_TITLE)
    current = "" if tip is None else git(["rev-parse", f"{tip}^{{tree}}"], cwd)
    if current == tree:
        stream.write(f"pytest-toll: {branch} already shows this badge\n")
        return "unchanged"
    author = {
        "GIT_AUTHOR_NAME": BOT_NAME,
        "GIT_AUTHOR_EMAIL": BOT_EMAIL,
        "GIT_COMMITTER_NAME": BOT_NAME,
        "GIT_COMMITTER_EMAIL": BOT_EMAIL,
    }
    commit = git(["commit-tree", tree, "-m", _message(BADGE_TITLE)], cwd, author)
    push(commit, branch, tip, remote=remote, cwd=cwd)
    stream.write(f"pytest-toll: published the badge to {branch}\n")
    return "published"

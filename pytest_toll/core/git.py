"""The one way toll runs git: with none of the programs a repository's config could name.

Git runs on a repository toll does not trust: one cloned from anyone, unpacked from an
archive, left by another user. Its ``.git/config`` may name programs git runs on its behalf
(a file-system monitor, hooks, a pager, a signature verifier, an external diff, an SSH
command, a lazy-fetch transport). Every call here passes settings with ``-c``, which outranks
every config file, that leave none of them to run, and an environment in which git asks
nothing of a terminal and reads no system config. Git runs from an argument list, never a
shell, with stdin closed and a timeout.

A call that must reach a remote (``remote=NAME``: fetch, push, ls-remote) keeps the
transports on, but the SSH command is ``ssh``, the remote's upload and receive commands are
git's own (given as the command's option: see :data:`REMOTE_PROGRAMS`) and the ``ext::``
transport is refused; every other call refuses transports, so a
partial clone's missing object is an error, not a fetch.

Callers avoid the commands that would run a repository's filters or diff drivers: they hash
with ``hash-object --no-filters`` and read logs with ``--no-textconv --no-ext-diff``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.limits import GIT_QUERY_TIMEOUT

#: Settings given with ``-c`` on every call: no program of the repository's config runs.
NEUTRAL_CONFIG = (
    # index refresh asks a file-system monitor hook; hooks are run from this folder
    "core.fsmonitor=false",
    f"core.hooksPath={os.devnull}",
    # a pager (global or per command) runs as a program; none is wanted with piped output
    "core.pager=cat",
    "pager.log=false",
    "pager.show=false",
    "pager.cat-file=false",
    "pager.rev-parse=false",
    # showing or making a signed commit runs the signer or verifier: gpg, gpgsm, ssh-keygen
    "log.showSignature=false",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "gpg.program=false",
    "gpg.openpgp.program=false",
    "gpg.x509.program=false",
    "gpg.ssh.program=false",
    "gpg.ssh.defaultKeyCommand=false",
    # diffs may run an external diff
    "diff.external=",
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
#: Without a remote: a partial clone fetches missing objects lazily over a transport (ssh, a
#: remote's uploadpack command, a remote helper); refused, so no transport program starts.
OFFLINE_CONFIG = ("protocol.allow=never", "core.sshCommand=false")
#: With a remote: the transport is wanted, but the SSH command is plain ``ssh``, no proxy
#: command runs, and the ``ext::`` transport (a command line as a URL) is refused.
NETWORK_CONFIG = ("core.sshCommand=ssh", "core.gitProxy=none", "protocol.ext.allow=never")


#: A remote's own programs: the commands that serve a fetch and a push on the other side,
#: run here for a remote on disk. ``remote.NAME.uploadpack`` in the config cannot be
#: outranked by ``-c`` (git takes the first of several), so the command's own option says
#: git's own program.
REMOTE_PROGRAMS = {
    "fetch": "--upload-pack=git-upload-pack",
    "ls-remote": "--upload-pack=git-upload-pack",
    "push": "--receive-pack=git-receive-pack",
}
NEUTRAL_ENVIRONMENT = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    # no prompt for a user name or password: a missing credential is an error
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "false",
    "SSH_ASKPASS": "false",
    # the same refusal of lazy fetches, for git 2.44 and later
    "GIT_NO_LAZY_FETCH": "1",
    # reading takes no optional lock and writes no refreshed index
    "GIT_OPTIONAL_LOCKS": "0",
    # a path named with * or :( is a file name, not a pattern
    "GIT_LITERAL_PATHSPECS": "1",
}
#: Variables of the caller's environment that would run a program or redirect git.
DROPPED_VARIABLES = ("GIT_EXTERNAL_DIFF", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_PROXY_COMMAND")


@dataclass(frozen=True)
class GitResult:
    """What one git call returned: its exit code and its output as bytes."""

    returncode: int
    stdout: bytes
    stderr: bytes

    @property
    def text(self) -> str:
        """stdout as text; surrogateescape, so a path that is not UTF-8 goes back to git as
        the same bytes."""
        return self.stdout.decode("utf-8", "surrogateescape")

    @property
    def first_error_line(self) -> str:
        lines = self.stderr.decode("utf-8", "replace").strip().splitlines()
        return lines[0] if lines else f"exit code {self.returncode}"


def argv(arguments: Sequence[str], *, remote: str | None = None) -> list[str]:
    """The full command line of one git call (one that reaches ``remote`` when given)."""
    command = ["git", "--no-pager"]
    for setting in (*NEUTRAL_CONFIG, *(NETWORK_CONFIG if remote else OFFLINE_CONFIG)):
        command += ["-c", setting]
    if arguments and arguments[0] in REMOTE_PROGRAMS:
        return [*command, arguments[0], REMOTE_PROGRAMS[arguments[0]], *arguments[1:]]
    return [*command, *arguments]


def environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment for git: neutral settings over it, ``extra`` last."""
    env = {k: v for k, v in os.environ.items() if k not in DROPPED_VARIABLES}
    env.update(NEUTRAL_ENVIRONMENT)
    env.update(extra or {})
    return env


def run(
    arguments: Sequence[str],
    cwd: Path,
    *,
    env: Mapping[str, str] | None = None,
    remote: str | None = None,
    timeout: float = GIT_QUERY_TIMEOUT,
) -> GitResult:
    """Run git in ``cwd``; raises CouldNotJudge when git is missing or times out (a failed
    command is a result: see :func:`output` for the call that must succeed)."""
    if not Path(cwd).is_dir():
        raise CouldNotJudge(f"{cwd}: no such folder to run git in")
    try:
        done = subprocess.run(
            argv(arguments, remote=remote),
            cwd=cwd,
            capture_output=True,
            timeout=timeout,
            check=False,
            env=environment(env),
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise CouldNotJudge("the git executable was not found on PATH") from None
    except subprocess.TimeoutExpired:
        what = arguments[0] if arguments else "?"
        raise CouldNotJudge(f"git {what} took longer than {timeout:g} s") from None
    return GitResult(done.returncode, done.stdout, done.stderr)


def output(
    arguments: Sequence[str],
    cwd: Path,
    *,
    env: Mapping[str, str] | None = None,
    remote: str | None = None,
    timeout: float = GIT_QUERY_TIMEOUT,
) -> str:
    """stdout of a git call that must succeed, stripped; CouldNotJudge naming the command
    and git's first error line when it fails."""
    done = run(arguments, cwd, env=env, remote=remote, timeout=timeout)
    if done.returncode != 0:
        raise CouldNotJudge(f"git {' '.join(arguments)}: {done.first_error_line}")
    return done.text.strip()

"""An MCP config file's server declarations as ledger ``servers:`` entries (``toll init``).

What the entry keeps and what it changes, each said in a comment above it:

- ``${VAR}`` / ``${VAR:-default}`` stay as written: the gate expands them as the host does
  (:mod:`pytest_toll.core.envrefs`). A plugin's ``${CLAUDE_PLUGIN_ROOT}`` and VS Code's
  ``${workspaceFolder}`` become the folder they stand for, relative to the ledger.
- A literal secret (an ``env`` value or header that reads like a credential, a URL's
  password, a token as its user name or a secret query value, in ``url``, ``env`` or a
  command argument) is never copied: it becomes a ``${NAME}`` reference, with a comment
  saying where to set it.
- A server fetched by ``npx``/``uvx`` without a version runs whatever is newest, so its
  tools can change under the gate with nothing changed here: the version the repository's
  lockfile records is pinned, or a comment says the package floats.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from pytest_toll.core.envrefs import references
from pytest_toll.core.errors import CouldNotJudge, UsageError
from pytest_toll.core.parse import load_json
from pytest_toll.core.secrets import is_secret_setting, looks_like_credential, url_secrets
from pytest_toll.core.textio import read_inside_root, read_text_inside_root

_VSCODE_WORKSPACE = "${workspaceFolder}"
_PLUGIN_ROOT = "${CLAUDE_PLUGIN_ROOT}"
#: Folders that hold a host's config rather than being a project of their own.
_HOST_FOLDERS = frozenset({".cursor", ".vscode", ".gemini", ".claude-plugin", ".claude"})
#: Config files whose missing servers key is worth a note (elsewhere it is just not one).
_NOTED = frozenset({".mcp.json", "claude_desktop_config.json"})


@dataclass(frozen=True)
class DeclaredServer:
    """One server declaration: the ledger entry it becomes, or why it cannot be one."""

    name: str
    origin: str
    entry: Mapping[str, Any]
    #: Set when the declaration cannot become an entry (a transport the ledger lacks).
    unusable: str | None = None
    #: The project or plugin folder's name, to tell two servers of one name apart.
    owner: str = "root"
    #: Comment lines written above the entry (what init changed, and why).
    notes: tuple[str, ...] = ()

    def renamed(self, name: str) -> DeclaredServer:
        return replace(self, name=name)


def config_folder(relative: str) -> str:
    """The project folder a config file belongs to (``plugins/x/.claude-plugin/plugin.json``
    and ``plugins/x/.mcp.json`` → ``plugins/x``; ``.cursor/mcp.json`` → ``.``)."""
    folder = PurePosixPath(relative).parent
    if folder.name in _HOST_FOLDERS:
        folder = folder.parent
    return folder.as_posix()


def _owner(relative: str) -> str:
    folder = config_folder(relative)
    if folder != ".":
        return PurePosixPath(folder).name
    host = PurePosixPath(relative).parent.name
    return host.strip(".") or "root"


def _servers_in(data: Any, key: str) -> Mapping[str, Any] | None:
    if not isinstance(data, Mapping):
        return None
    declared = data.get(key)
    if isinstance(declared, Mapping):
        return declared
    # A plugin's .mcp.json may hold the servers at its top level.
    if data and all(
        isinstance(value, Mapping) and ("command" in value or "url" in value)
        for value in data.values()
    ):
        return data
    return None


def read_declarations(
    data: Any, relative: str, key: str, root: Path
) -> tuple[list[DeclaredServer], str | None]:
    """The servers of one config file, and a note when the file declares none."""
    declared = _servers_in(data, key)
    if declared is None:
        name = PurePosixPath(relative).name
        host = PurePosixPath(relative).parent.name in (".cursor", ".vscode", ".gemini")
        if name in _NOTED or host:
            return [], f"{relative}: no {key} object; nothing taken from it"
        return [], None
    folder = config_folder(relative)
    servers: list[DeclaredServer] = []
    for name, declaration in declared.items():
        where = f"{relative}: {key}.{name}"
        if not isinstance(declaration, Mapping):
            servers.append(
                DeclaredServer(str(name), relative, {}, "not an object", _owner(relative))
            )
            continue
        entry, unusable = server_entry(declaration, where, folder=folder)
        notes = _protect_secrets(entry, str(name)) + _pin_floating(entry, root, folder)
        servers.append(
            DeclaredServer(str(name), relative, entry, unusable, _owner(relative), tuple(notes))
        )
    return servers, None


def _placed(value: str, folder: str) -> str:
    """Host variables that name a folder, as that folder relative to the ledger."""
    if value.startswith(_VSCODE_WORKSPACE + "/"):
        value = value[len(_VSCODE_WORKSPACE) + 1 :]
    elif value == _VSCODE_WORKSPACE:
        value = "."
    if _PLUGIN_ROOT in value:
        value = value.replace(_PLUGIN_ROOT, folder)
    return value


def server_entry(
    declaration: Mapping[str, Any], where: str, *, folder: str = "."
) -> tuple[dict[str, Any], str | None]:
    """A ledger ``servers:`` entry from one declaration, and a reason when it cannot be used."""
    kind = str(declaration.get("type") or declaration.get("transport") or "")
    url = declaration.get("url") or declaration.get("serverUrl") or declaration.get("httpUrl")
    if declaration.get("command"):
        command = declaration["command"]
        argv = [command] if isinstance(command, str) else list(command)
        args = declaration.get("args") or []
        if not isinstance(args, list):
            raise UsageError(f"{where}.args: must be a list of strings")
        entry: dict[str, Any] = {"command": [_placed(str(part), folder) for part in argv + args]}
        if isinstance(declaration.get("env"), Mapping) and declaration["env"]:
            entry["env"] = {str(k): _placed(str(v), folder) for k, v in declaration["env"].items()}
        if isinstance(declaration.get("cwd"), str):
            entry["cwd"] = _placed(declaration["cwd"], folder)
        if declaration.get("envFile"):
            return entry, "its envFile is not read by the ledger; add the variables under env"
        return entry, None
    if isinstance(url, str):
        entry = {"url": _placed(url, folder)}
        if isinstance(declaration.get("headers"), Mapping) and declaration["headers"]:
            entry["headers"] = {str(k): str(v) for k, v in declaration["headers"].items()}
        if kind == "sse":
            return entry, "an SSE server; the ledger measures stdio and streamable-HTTP servers"
        return entry, None
    return {}, "neither a command nor a url"


# --- secrets ------------------------------------------------------------------------------


def _variable(*words: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", "_".join(words)).strip("_").upper() or "TOKEN"


def _protect_secrets(entry: dict[str, Any], server: str) -> list[str]:
    """Literal secrets in ``entry`` replaced by ``${NAME}`` references, in place; a comment
    line for each saying where to set it."""
    notes: list[str] = []
    env = entry.get("env") or {}
    for name, value in env.items():
        if value and not references(value) and is_secret_setting(name, value, kind="env"):
            env[name] = f"${{{name}}}"
            notes.append(
                f"env {name}: the config held a literal secret; toll init did not copy it. "
                f"Set {name} in the environment pytest --toll runs in (a CI secret)."
            )
    if isinstance(entry.get("url"), str):
        entry["url"], found = _protect_url(entry["url"], server)
        notes += [f"url: {note}" for note in found]
    if isinstance(entry.get("command"), list):
        for index, part in enumerate(entry["command"]):
            entry["command"][index], found = _protect_url(part, server)
            notes += [f"command argument {index}: {note}" for note in found]
    headers = entry.get("headers") or {}
    for name, value in headers.items():
        if value and not references(value) and is_secret_setting(name, value, kind="header"):
            variable = _variable(server, name)
            scheme, space, _ = value.strip().partition(" ")
            headers[name] = f"{scheme} ${{{variable}}}" if space else f"${{{variable}}}"
            notes.append(
                f"header {name}: the config held a literal secret; toll init did not copy "
                f"it. Set {variable} in the environment pytest --toll runs in (a CI secret)."
            )
    return notes


def _protect_url(value: str, server: str) -> tuple[str, list[str]]:
    """``value`` with each credential a URL in it carries (:func:`url_secrets`: a password, a
    token as the user name, a secret query value) replaced by a ``${NAME}`` reference, and a
    note for each; a value that is no such URL as it is."""
    if not url_secrets(value):
        return value, []
    parts = urlsplit(value.strip())
    notes: list[str] = []

    def reference(what: str) -> str:
        variable = _variable(server, what)
        notes.append(
            f"the config held a literal {what.lower().replace('_', ' ')}; toll init did not "
            f"copy it. Set {variable} in the environment pytest --toll runs in (a CI secret)."
        )
        return f"${{{variable}}}"

    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, colon, password = userinfo.partition(":")
        if not references(user) and looks_like_credential(unquote(user)):
            user = reference("token")
        if colon and password and not references(password):
            password = reference("password")
        netloc = f"{user}{colon}{password}@{host}"
    pieces = []
    for piece in parts.query.split("&") if parts.query else []:
        name, equals, item = piece.partition("=")
        secret = item and is_secret_setting(unquote(name), unquote(item), kind="query")
        if equals and secret and not references(item):
            piece = f"{name}={reference(unquote(name))}"
        pieces.append(piece)
    return urlunsplit((parts.scheme, netloc, parts.path, "&".join(pieces), parts.fragment)), notes


# --- floating packages --------------------------------------------------------------------

#: Options of the package runners that take a value (so the value is not the package).
_VALUED_OPTIONS = frozenset(
    {"-p", "--package", "--from", "--with", "--python", "--index", "--index-url", "-c"}
)


def _package_index(argv: Sequence[str]) -> int | None:
    """The index of the package argument after ``npx``/``uvx`` (options skipped)."""
    index = 1
    while index < len(argv):
        part = argv[index]
        if part in _VALUED_OPTIONS:
            index += 2
            continue
        if part.startswith("-"):
            index += 1
            continue
        return index
    return None


def _split_npm(spec: str) -> tuple[str, str | None]:
    """``@scope/pkg@1.2.3`` → (``@scope/pkg``, ``1.2.3``); no version → None."""
    head, at, version = spec[1:].partition("@") if spec.startswith("@") else spec.partition("@")
    name = ("@" + head) if spec.startswith("@") else head
    return name, (version if at else None)


def _split_python(spec: str) -> tuple[str, str | None]:
    for separator in ("==", "@"):
        name, found, version = spec.partition(separator)
        if found:
            return name, version
    return re.split(r"[<>=!~\[]", spec, maxsplit=1)[0], None


def _json_or_none(path: Path, root: Path) -> Any:
    """A lock file or manifest beside a server's config, through the Files and Parsing
    doors; None when there is none or it cannot be read (the pin is then not taken)."""
    try:
        return load_json(read_inside_root(path, root), str(path))
    except CouldNotJudge:
        return None


def _npm_locked(root: Path, folders: Sequence[str], package: str) -> tuple[str, str] | None:
    for folder in folders:
        data = _json_or_none(root / folder / "package-lock.json", root)
        if isinstance(data, Mapping):
            packages = data.get("packages") or {}
            row = packages.get(f"node_modules/{package}") if isinstance(packages, Mapping) else None
            if isinstance(row, Mapping) and isinstance(row.get("version"), str):
                return row["version"], (PurePosixPath(folder) / "package-lock.json").as_posix()
        declared = _json_or_none(root / folder / "package.json", root)
        if declared is None:
            continue
        for section in ("dependencies", "devDependencies"):
            versions = declared.get(section) if isinstance(declared, Mapping) else None
            version = versions.get(package) if isinstance(versions, Mapping) else None
            # Only an exact version is a pin; a range resolves differently over time.
            if isinstance(version, str) and re.fullmatch(r"\d+\.\d+\.\d+[\w.+-]*", version):
                return version, (PurePosixPath(folder) / "package.json").as_posix()
    return None


def _uv_locked(root: Path, folders: Sequence[str], package: str) -> tuple[str, str] | None:
    wanted = re.sub(r"[-_.]+", "-", package).lower()
    for folder in folders:
        try:
            text = read_text_inside_root(root / folder / "uv.lock", root)
        except CouldNotJudge:
            continue
        for block in text.split("[[package]]"):
            name = re.search(r'^name = "([^"]+)"', block, re.M)
            version = re.search(r'^version = "([^"]+)"', block, re.M)
            if name and version and re.sub(r"[-_.]+", "-", name.group(1)).lower() == wanted:
                return version.group(1), (PurePosixPath(folder) / "uv.lock").as_posix()
    return None


def _pin_floating(entry: dict[str, Any], root: Path, folder: str) -> list[str]:
    """Pin an unversioned ``npx``/``uvx`` package from the repository's lockfile, in place;
    otherwise a comment that it floats."""
    argv = entry.get("command")
    if not isinstance(argv, list) or not argv:
        return []
    runner = PurePosixPath(str(argv[0])).name
    if runner not in ("npx", "uvx"):
        return []
    if runner == "uvx" and any(part == "--from" for part in argv):
        return [
            "uvx --from: the package comes from where --from says; if that is not a fixed "
            "version, its tools can change under the gate with nothing changed here"
        ]
    index = _package_index(argv)
    if index is None:
        return []
    spec = str(argv[index])
    name, version = _split_npm(spec) if runner == "npx" else _split_python(spec)
    if version and version != "latest":
        return []
    folders = list(dict.fromkeys([folder, "."]))
    locked = (_npm_locked if runner == "npx" else _uv_locked)(root, folders, name)
    if locked is not None:
        pinned, source = locked
        argv[index] = f"{name}@{pinned}"
        return [f"{runner} {spec}: pinned to {pinned}, the version {source} records"]
    return [
        f"{runner} {spec}: not pinned, so each run fetches the newest {name} and its tools "
        f"can change under the gate with nothing changed here; pin a version "
        f"({name}@<version>) to gate what you ship"
    ]

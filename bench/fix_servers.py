"""``toll fix``'s safe edits on a set of real MCP servers' tool lists, re-measured.

    python bench/fix_servers.py install [--manifest M] [--root DIR]   # npm / a venv per server
    python bench/fix_servers.py list    [--manifest M] [--root DIR]   # tools/list, our client
    python bench/fix_servers.py measure [LISTS_DIR] [--json]          # the figure

``install`` puts each manifest server under ``ROOT/NAME`` (npm: ``npm install --prefix``,
PyPI: a venv of its own, never the project's). ``list`` starts each one with the client
``toll weigh`` uses and saves its ``tools/list`` result as ``ROOT/lists/NAME.json``; a server
that does not list (it wants a real key, a daemon, a browser) is reported and skipped.

``measure`` runs ``toll fix``'s planner on every ``*.json`` list in the folder, writes what
``--write`` would write, reads that file back and weighs it as ``toll weigh --tools`` does:
``after`` is that re-measured total (claude serialization, o200k), and it must equal the
planner's own ``after`` (the run fails if any differs). It prints, per server and in total,
before, after and the ratio after/before (lower is better; 0.95 is a 5% saving).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_toll.definitions.fix import plan_fixes, write_fixed
from pytest_toll.definitions.source import list_server
from pytest_toll.definitions.tools import load_tools_file
from pytest_toll.definitions.weigh import weigh

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "fix_servers.json"
ROOT = Path("/tmp/realservers")


@dataclass(frozen=True)
class Row:
    name: str
    tools: int
    before: int
    after: int

    @property
    def ratio(self) -> float:
        return self.after / self.before if self.before else 1.0


def servers(manifest: Path) -> list[dict[str, Any]]:
    data = json.loads(manifest.read_text(encoding="utf-8"))
    return list(data["servers"])


def install(manifest: Path, root: Path) -> None:
    for server in servers(manifest):
        where = root / server["name"]
        spec = f"{server['package']}@{server['version']}"
        if server["registry"] == "npm":
            argv = ["npm", "install", "--no-audit", "--no-fund", "--ignore-scripts"]
            argv += ["--prefix", str(where), spec]
        else:
            venv = where / "venv"
            if not (venv / "bin" / "python").exists():
                subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            argv = [str(venv / "bin" / "pip"), "install", "-q", spec.replace("@", "==")]
        done = subprocess.run(argv, capture_output=True, text=True)
        print(f"{'ok  ' if done.returncode == 0 else 'FAIL'} {server['name']} {spec}")


def list_all(manifest: Path, root: Path, timeout: float) -> None:
    lists = root / "lists"
    lists.mkdir(parents=True, exist_ok=True)
    for server in servers(manifest):
        where = root / server["name"]
        command = [part.replace("{dir}", str(where)) for part in server["command"]]
        try:
            listing = list_server(command, None, env=server.get("env"), cwd=where, timeout=timeout)
        except Exception as error:  # a bench: one server's failure is a line, not the end
            print(f"skip {server['name']}: {type(error).__name__}: {str(error)[:160]}")
            continue
        data = {"tools": [dict(tool) for tool in listing.tools]}
        out = lists / f"{server['name']}.json"
        out.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"ok   {server['name']}: {len(listing.tools)} tools")


def measure_one(path: Path, scratch: Path) -> Row:
    tools, shape = load_tools_file(path)
    report = plan_fixes(tools, shape=shape, target=path.stem)
    written = scratch / path.name
    write_fixed(report, written)
    again, again_shape = load_tools_file(written)
    after = weigh(again, target=path.stem, source_shape=again_shape, breakdown_top=0).claude
    if after != report.after:
        raise SystemExit(f"{path.name}: planned after {report.after} != re-measured {after}")
    return Row(path.stem, len(tools), report.before, after)


def measure(folder: Path) -> list[Row]:
    with tempfile.TemporaryDirectory() as scratch:
        return [
            measure_one(path, Path(scratch))
            for path in sorted(folder.glob("*.json"))
            if load_tools_file(path)[0]
        ]


def table(rows: list[Row]) -> str:
    lines = [
        "| server | tools | before | after | after/before |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for row in sorted(rows, key=lambda r: r.ratio):
        lines.append(
            f"| {row.name} | {row.tools} | {row.before:,} | {row.after:,} | {row.ratio:.3f} |"
        )
    before = sum(row.before for row in rows)
    after = sum(row.after for row in rows)
    tools = sum(row.tools for row in rows)
    total = after / before if before else 1.0
    lines.append(f"| **all {len(rows)}** | {tools} | {before:,} | {after:,} | **{total:.3f}** |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="step", required=True)
    for step in ("install", "list"):
        one = sub.add_parser(step)
        one.add_argument("--manifest", type=Path, default=MANIFEST)
        one.add_argument("--root", type=Path, default=ROOT)
        one.add_argument("--timeout", type=float, default=60.0)
    how = sub.add_parser("measure")
    how.add_argument("lists", type=Path, nargs="?", default=ROOT / "lists")
    how.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.step == "install":
        install(args.manifest, args.root)
    elif args.step == "list":
        list_all(args.manifest, args.root, args.timeout)
    else:
        rows = measure(args.lists)
        if args.json:
            before = sum(row.before for row in rows)
            after = sum(row.after for row in rows)
            print(
                json.dumps(
                    {
                        "servers": [row.__dict__ | {"ratio": round(row.ratio, 4)} for row in rows],
                        "before": before,
                        "after": after,
                        "ratio": round(after / before, 4) if before else 1.0,
                    },
                    indent=2,
                )
            )
        else:
            print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

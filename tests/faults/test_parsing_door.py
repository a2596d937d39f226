"""The Parsing door (issue 34, door 2): one bounded JSON, YAML and TOML loader each. Depth,
size and alias caps; numbers bounded where stored; lone surrogates and bytes that are not
UTF-8 handled; a document that cannot be loaded is reported by name (and line), and its
siblings are still read."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from pytest_toll.core.parse import ParseError, load_json, load_toml, load_yaml
from pytest_toll.surface.agents import AGENT, measure_delegates
from pytest_toll.surface.plugins import measure_plugin
from pytest_toll.transcripts.summary import summarize_file

ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(9)
)


def test_a_lone_surrogate_is_replaced_not_carried() -> None:
    value = load_json(b'{"name": "a\\ud800b", "ok": "\\ud83d\\ude00"}', "x.json")
    assert value == {"name": "a\ufffdb", "ok": "\U0001f600"}
    json.dumps(value, ensure_ascii=False).encode("utf-8")


def test_bytes_that_are_not_utf8_are_an_error_naming_the_file() -> None:
    with pytest.raises(ParseError, match=r"x\.json.*UTF-8"):
        load_json(b'{"a": "\xff\xfe"}', "x.json")


def test_a_json_error_names_file_and_line() -> None:
    with pytest.raises(ParseError, match=r"x\.json:2:"):
        load_json(b'{\n  "a": ,\n}', "x.json")


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_deep_nesting_is_the_doors_error(depth: int) -> None:
    with pytest.raises(ParseError, match="nests deeper"):
        load_json(b"[" * depth + b"]" * depth, "deep.json")
    with pytest.raises(ParseError):
        load_yaml("[" * depth + "]" * depth, "deep.yaml")


def test_a_yaml_alias_bomb_is_refused_quickly() -> None:
    started = time.perf_counter()
    with pytest.raises(ParseError, match="alias"):
        load_yaml(ALIAS_BOMB, "bomb.yaml")
    assert time.perf_counter() - started < 5


def test_huge_numbers_are_bounded() -> None:
    with pytest.raises(ParseError, match="number"):
        load_json(b'{"n": ' + b"9" * 5000 + b"}", "n.json")
    with pytest.raises(ParseError, match="number"):
        load_json(b'{"n": 1e400}', "n.json")
    assert load_json(b'{"n": 12345678901234567890}', "n.json") == {"n": 12345678901234567890}


def test_toml_is_bounded_and_names_the_file() -> None:
    with pytest.raises(ParseError, match=r"a\.toml"):
        load_toml("x = [" * 1000 + "]" * 1000, "a.toml")
    with pytest.raises(ParseError, match=r"a\.toml"):
        load_toml("x = = 1", "a.toml")
    assert load_toml("x = 1\n", "a.toml") == {"x": 1}


def test_a_document_over_its_size_cap_is_refused() -> None:
    with pytest.raises(ParseError, match="larger than"):
        load_json(b"[" + b"1," * 600 + b"1]", "big.json", max_bytes=1000)


def _claude_usage(path: Path, tokens: str) -> None:
    def line(kind: str, content: list[object], usage: str = "") -> str:
        message = json.dumps({"id": "m" + kind, "role": kind, "content": content})
        if usage:
            message = message[:-1] + f', "usage": {{"input_tokens": {usage}, "output_tokens": 1}}}}'
        return f'{{"type": "{kind}", "sessionId": "s", "message": {message}}}'

    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "x" * 100}
    path.write_text(line("assistant", [call], tokens) + "\n" + line("user", [result]) + "\n")


@pytest.mark.parametrize("tokens", [str(2**64), str(2**64 - 1), str(2**63), str(10**400), "1e400"])
def test_a_transcript_claiming_absurd_tokens_is_a_bad_line(tmp_path: Path, tokens: str) -> None:
    path = tmp_path / "s.jsonl"
    _claude_usage(path, tokens)
    summary = summarize_file(path)
    assert summary.unreadable_lines == 1  # counted as a bad line, not summed or stored


@pytest.mark.slow
def test_absurd_tokens_do_not_break_the_scan_cache(tmp_path: Path) -> None:
    from tests.faults.hostile import run_toll

    root = tmp_path / "sessions"
    root.mkdir()
    _claude_usage(root / "s.jsonl", str(2**63))
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    for _ in range(2):  # the second run reads the cache the first wrote
        outcome = run_toll("scan", "--root", str(root), "--json", env=env)
        assert "Traceback" not in outcome.output
        assert "cache" not in outcome.stderr.lower()


def test_one_undecodable_agent_hides_none_of_its_siblings(tmp_path: Path) -> None:
    plugin = tmp_path / "kit"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "kit"}))
    agents = plugin / "agents"
    agents.mkdir()
    (agents / "good.md").write_text("---\nname: good\ndescription: " + "grew " * 300 + "\n---\nB\n")
    (agents / "bad.md").write_bytes(b"---\nname: bad\ndescription: \xff\xfe\n---\n")
    report = measure_plugin(plugin)
    components = {component.name: component for component in report.components}
    assert components["agents/good"].always_on > 300  # (it was dropped with its sibling)
    assert any("bad.md" in f.message and f.rule == "A101" for f in report.findings)
    direct = measure_delegates(agents, AGENT, root=plugin)
    assert {d.name for d in direct.delegates} == {"good", "bad"}


def test_an_agent_frontmatter_alias_bomb_is_never_expanded(tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    agents.mkdir()
    bomb = ALIAS_BOMB.replace("a: &a", "description: hi\nname: bomb\na: &a")
    (agents / "bomb.md").write_text(f"---\n{bomb}---\nBody\n")
    started = time.perf_counter()
    report = measure_delegates(agents, AGENT, root=tmp_path)
    # What is kept of the fields is small: the bomb is refused by the door (the host's loose
    # reading of known keys is what is left), never held to be expanded by a report.
    assert len(json.dumps([d.fields for d in report.delegates])) < 10_000
    assert time.perf_counter() - started < 10


def test_a_deep_plugin_manifest_is_a_clean_error(tmp_path: Path) -> None:
    from pytest_toll.core.errors import CouldNotJudge

    plugin = tmp_path / "kit"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(CouldNotJudge, match=r"plugin\.json"):
        measure_plugin(plugin)


def test_a_lone_surrogate_in_a_plugin_name_reaches_no_encoder(tmp_path: Path) -> None:
    plugin = tmp_path / "kit"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text('{"name": "kit\\udc80"}')
    report = measure_plugin(plugin)
    report.name.encode("utf-8")


def test_a_lone_surrogate_in_a_transcript_line_is_a_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    call = '{"type": "tool_use", "id": "t1", "name": "Ba\\ud800sh", "input": {}}'
    message = f'{{"id": "m", "role": "assistant", "content": [{call}]}}'
    path.write_text(f'{{"type": "assistant", "sessionId": "s", "message": {message}}}\n')
    assert summarize_file(path).unreadable_lines == 1

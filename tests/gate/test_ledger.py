"""The toll.yaml ledger: validation with file/line/key errors, and the comment-keeping writer."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_toll.core.errors import UsageError
from pytest_toll.definitions import results as result_rules
from pytest_toll.definitions import rules
from pytest_toll.definitions import usage as usage_rules
from pytest_toll.gate.ledger import (
    DELETE,
    SCHEMA_PATH,
    DuplicateKey,
    load_ledger,
    schema,
    update_ledger,
)
from pytest_toll.skills import rules as skill_rules
from pytest_toll.surface import rules as surface_rules
from pytest_toll.transcripts import decisions

LEDGER = """\
# the team's ledger
version: 1
window: 200000
servers:
  files:
    command: [python, -m, app.server]   # started fresh for each run
    budget: 4000
    pin: 3712
    tools: {read_file: 312, write_file: 455}
skills:
  pdf: {path: skills/pdf, pin: {metadata: 95, body: 2310, references: 12004}}
tests:
  "tests/test_agent.py::test_prompt": {budget: 6000, pin: 5123}
transcripts:
  roots:
    - ~/.claude/projects
  decide_above_tokens: 50000
  decisions:
    "$ sed": {status: keep, reason: reading slices is the job}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "toll.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_load_gives_plain_data_and_lines(tmp_path: Path) -> None:
    ledger = load_ledger(write(tmp_path, LEDGER))
    assert ledger.data["servers"]["files"] == {
        "command": ["python", "-m", "app.server"],
        "budget": 4000,
        "pin": 3712,
        "tools": {"read_file": 312, "write_file": 455},
    }
    assert type(ledger.data["servers"]) is dict
    assert ledger.line_of(("servers", "files")) == 5
    assert ledger.line_of(("servers", "files", "pin")) == 8
    assert ledger.line_of(("tests", "tests/test_agent.py::test_prompt")) == 13
    assert ledger.line_of(("transcripts", "roots", 0)) == 16
    assert ledger.line_of(("nothing",)) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "servers:\n  files:\n    command: x\n    budgt: 3\n",
            "toll.yaml:4: servers.files.budgt: unknown key (expected one of: budget, "
            "check_order, command, cwd, env, headers, pin, results, rules, timeout, tools, tools_file, "
            "url)",
        ),
        ("version: 1\nservrs: {}\n", "toll.yaml:2: servrs: unknown key"),
        (
            "servers:\n  files:\n    url: http://x/mcp\n    budget: -1\n",
            "toll.yaml:4: servers.files.budget: must be at least 0, not -1",
        ),
        (
            "tests:\n  t.py::a: {pin: many}\n",
            "toll.yaml:2: tests.t.py::a.pin: must be integer, not a string 'many'",
        ),
        (
            "servers:\n  x: {command: a, url: http://b}\n",
            "toll.yaml:2: servers.x: give exactly one of command, url, tools_file "
            "(found command, url)",
        ),
        ("servers:\n  x: {budget: 3}\n", "toll.yaml:2: servers.x: give exactly one of"),
        (
            "version: 1\nservers:\n  a: {url: http://x}\n  a: {url: http://y}\n",
            "toll.yaml:4: servers.a: duplicate key (first at line 3)",
        ),
        ("servers: [\n", "toll.yaml:2: invalid YAML"),
        ("- a\n", "toll.yaml:1: the ledger must be a mapping of sections, not a list"),
        ("rules: {E125: loud}\n", "toll.yaml:1: rules.E125: must be one of error, warn"),
        (
            "version: 1\nrules:\n  E125: off\n  E172: error\n",
            "toll.yaml:4: rules.E172: unknown name (expected one of: E112, E116,",
        ),
        (
            "limits:\n  tool_tokens: 500\n  tool_tokenz: 900\n",
            "toll.yaml:3: limits.tool_tokenz: unknown name (expected one of: description_good_max,",
        ),
        (
            "servers:\n  x:\n    tools_file: t.json\n    rules: {S999: off}\n",
            "toll.yaml:4: servers.x.rules.S999: unknown name",
        ),
        ("version: 2\n", "toll.yaml:1: version: must be 1, not 2"),
    ],
)
def test_errors_name_file_line_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(UsageError) as raised:
        load_ledger(path)
    assert str(raised.value).startswith(f"{tmp_path}/{message}")


def test_duplicate_decisions_are_returned_for_tl004(tmp_path: Path) -> None:
    text = (
        LEDGER + '    Read: {status: replace, with: a context tool}\n    "$ sed": {status: watch}\n'
    )
    path = write(tmp_path, text)
    with pytest.raises(DuplicateKey) as raised:
        load_ledger(path)
    assert raised.value.key_path == ("transcripts", "decisions", "$ sed")
    assert raised.value.line == 21
    ledger = load_ledger(path, allow_duplicate_decisions=True)
    assert ledger.duplicate_decisions == [("$ sed", 21)]
    # The first decision wins; the duplicate is the rule's to report.
    assert ledger.data["transcripts"]["decisions"]["$ sed"]["status"] == "keep"


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"toll\.yaml: no such ledger file"):
        load_ledger(tmp_path / "toll.yaml")
    empty = load_ledger(tmp_path / "toll.yaml", missing_ok=True)
    assert (empty.data, empty.exists) == ({}, False)


def test_update_keeps_comments_order_and_style(tmp_path: Path) -> None:
    path = write(tmp_path, LEDGER)
    changed = update_ledger(
        path,
        {
            ("servers", "files", "pin"): 3600,
            ("servers", "files", "tools", "read_file"): 200,
            ("servers", "files", "tools", "write_file"): DELETE,
            ("skills", "pdf", "pin", "body"): 2000,
            ("tests", "tests/test_new.py::test_x", "pin"): 12,
        },
    )
    assert changed
    assert path.read_text() == LEDGER.replace("pin: 3712", "pin: 3600").replace(
        "{read_file: 312, write_file: 455}", "{read_file: 200}"
    ).replace("body: 2310", "body: 2000").replace(
        "{budget: 6000, pin: 5123}\n",
        "{budget: 6000, pin: 5123}\n  tests/test_new.py::test_x: {pin: 12}\n",
    )
    load_ledger(path)


def test_update_with_nothing_changed_leaves_the_file_alone(tmp_path: Path) -> None:
    path = write(tmp_path, LEDGER)
    before = path.stat().st_mtime_ns
    assert not update_ledger(path, {("servers", "files", "pin"): 3712})
    assert not update_ledger(path, {("servers", "gone", "pin"): DELETE})
    assert path.read_text() == LEDGER
    assert path.stat().st_mtime_ns == before


def test_update_creates_a_missing_ledger(tmp_path: Path) -> None:
    path = tmp_path / "toll.yaml"
    assert update_ledger(path, {("tests", "t.py::a", "pin"): 7})
    assert path.read_text() == "version: 1\ntests:\n  t.py::a: {pin: 7}\n"
    assert load_ledger(path).data == {"version": 1, "tests": {"t.py::a": {"pin": 7}}}


def test_update_refuses_a_ledger_with_duplicates(tmp_path: Path) -> None:
    path = write(tmp_path, "tests:\n  a: {pin: 1}\n  a: {pin: 2}\n")
    with pytest.raises(DuplicateKey):
        update_ledger(path, {("tests", "a", "pin"): 0})


def test_write_is_atomic_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = write(tmp_path, LEDGER)
    update_ledger(path, {("servers", "files", "pin"): 1})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["toll.yaml"]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(alphabet=st.sampled_from(list("ab:{}[]-, \n'\"#&*!|>%@`\t0123456789")), max_size=80))
def test_any_text_loads_or_is_a_usage_error(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, text)
    try:
        ledger = load_ledger(path)
    except UsageError as error:
        assert str(error).startswith(str(path))
    else:
        assert isinstance(ledger.data, dict)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.dictionaries(
        st.text(alphabet="abcxyz_:/.", min_size=1, max_size=12),
        st.integers(min_value=0, max_value=10**7),
        max_size=6,
    )
)
def test_update_then_load_round_trips(tmp_path: Path, pins: dict[str, int]) -> None:
    path = write(tmp_path, "# keep me\nversion: 1\n")
    update_ledger(path, {("tests", name, "pin"): pin for name, pin in pins.items()})
    data = load_ledger(path).data
    assert {name: entry["pin"] for name, entry in (data.get("tests") or {}).items()} == pins
    assert path.read_text().startswith("# keep me\n")
    assert not update_ledger(path, {("tests", name, "pin"): pin for name, pin in pins.items()})


EXAMPLE = Path(__file__).resolve().parents[2] / "toll.yaml.example"


def _schema_keys(node: object) -> set[str]:
    keys: set[str] = set()
    if isinstance(node, dict):
        keys.update(node.get("properties", {}))
        for value in node.values():
            keys |= _schema_keys(value)
    elif isinstance(node, list):
        for value in node:
            keys |= _schema_keys(value)
    return keys


def test_the_example_is_valid_and_documents_every_key() -> None:
    ledger = load_ledger(EXAMPLE)
    assert ledger.data["servers"]["files"]["pin"] == 3712
    text = EXAMPLE.read_text()
    undocumented = sorted(key for key in _schema_keys(schema()) if f"{key}:" not in text)
    assert undocumented == []


def test_update_keeps_windows_line_endings(tmp_path: Path) -> None:
    path = tmp_path / "toll.yaml"
    path.write_bytes(b"# pins\r\nversion: 1\r\ntests:\r\n  t.py::a: {pin: 7}\r\n")
    assert update_ledger(path, {("tests", "t.py::a", "pin"): 5})
    assert path.read_bytes() == b"# pins\r\nversion: 1\r\ntests:\r\n  t.py::a: {pin: 5}\r\n"
    assert not update_ledger(path, {("tests", "t.py::a", "pin"): 5})


def test_schema_names_every_rule_and_limit_the_rules_modules_know() -> None:
    """The shipped schema's closed lists stay in step with the rules that read them."""
    import json
    import re

    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    limits = set(schema["properties"]["limits"]["propertyNames"]["enum"])
    assert limits == set(rules.DEFAULT_THRESHOLDS) | set(skill_rules.DEFAULT_THRESHOLDS) | set(
        surface_rules.DEFAULT_THRESHOLDS
    ) | set(result_rules.DEFAULT_THRESHOLDS)
    rule_ids = schema["$defs"]["rules"]["propertyNames"]["enum"]
    assert rule_ids == [
        *rules.RULE_IDS,
        *skill_rules.RULE_IDS,
        *decisions.RULE_IDS,
        *surface_rules.RULE_IDS,
        *result_rules.RULE_IDS,
        *usage_rules.RULE_IDS,
    ]
    for module in (rules, skill_rules, decisions, surface_rules, result_rules, usage_rules):
        source = Path(module.__file__ or "").read_text(encoding="utf-8")
        used = set(re.findall(r'"((?:E|S|TL|M|A|R)\d{3})"', source))
        assert used == set(module.RULE_IDS), module.__name__


def test_a_rewritten_pin_no_longer_says_toll_init_measured_it(tmp_path: Path) -> None:
    # Issue #25: after an allowed increase the pin's comment still read "measured by toll init".
    path = tmp_path / "toll.yaml"
    note = "# machine: measured by toll init; --toll-update lowers it"
    path.write_text(
        "version: 1\nservers:\n  s:\n    tools_file: t.json\n"
        f"    budget: 9000  # human ceiling\n    pin: 3712  {note}\n"
        f"skills:\n  pdf:\n    path: skills/pdf\n    pin: {{metadata: 40, body: 146}}  {note}\n"
        f"  docx:\n    path: skills/docx\n    pin: {{metadata: 40, body: 146}}  {note}\n"
    )
    assert update_ledger(
        path,
        {
            ("servers", "s", "pin"): 3800,
            ("skills", "pdf", "pin", "body"): 140,
            ("skills", "docx", "pin", "executed"): 50,
        },
    )
    text = path.read_text()
    assert (
        "pin: 3800  # machine: raised with --toll-allow-increase; --toll-update lowers it" in text
    )
    assert (
        "pin: {metadata: 40, body: 140}  # machine: updated by --toll-update; --toll-update lowers it"
        in text
    )
    # A part added (no earlier value) is not an increase of a measured pin.
    docx = next(line for line in text.splitlines() if "executed: 50}" in line)
    assert "# machine: updated by --toll-update" in docx
    assert "budget: 9000  # human ceiling" in text
    assert load_ledger(path).data["servers"]["s"]["pin"] == 3800

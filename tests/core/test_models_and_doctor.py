"""``toll models`` (the catalogue and which layer answered) and ``toll doctor``, as real
processes in a scratch folder."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_toll.core import selfcheck
from pytest_toll.core.models import shipped_catalogue
from tests.cli import run_toll as toll


def test_the_catalogue_rows_the_issue_lists() -> None:
    catalogue = shipped_catalogue()
    grok = catalogue.get("grok-4.6")
    assert (grok.prices.input, grok.prices.output, grok.window) == (2, 6, 500_000)
    assert grok.prices_for(199_999).input == 2 and grok.prices_for(200_000).output == 12
    older = catalogue.get("grok-4.3")
    assert (older.prices_for(199_999).input, older.prices_for(199_999).output) == (1.25, 2.5)
    assert (older.prices_for(200_000).input, older.prices_for(200_000).output) == (2.5, 5.0)
    gemini = catalogue.get("gemini-3.1-pro-preview")
    assert (gemini.prices_for(200_000).input, gemini.prices_for(200_000).output) == (2, 12)
    assert (gemini.prices_for(200_001).input, gemini.prices_for(200_001).output) == (4, 18)
    assert catalogue.get("claude-opus-4-8").window == 1_000_000
    assert catalogue.get("claude-opus-4-5").window == 200_000
    assert catalogue.get("gemini-2.5-pro").window == 1_048_576
    for model in catalogue.models.values():
        assert model.sources and model.read, model.name  # every row says where and when


def test_toll_models_says_which_layer_answered(tmp_path: Path) -> None:
    table = toll("models", cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    rows = {line.split()[0]: line.split() for line in table.stdout.splitlines()[1:] if line}
    assert rows["grok-4.6"][1:5] == ["xai", "500,000", "$2", "$6"]
    assert rows["grok-4.6"][-1] == "package"
    one = json.loads(toll("models", "gemini-3.1-pro-preview", "--json", cwd=tmp_path).stdout)
    (row,) = one["models"]
    assert row["tiers"] == [{"from": 200_001, "prices": {"input": 4, "output": 18}}]
    assert row["scale"] == {
        "factor": 1.0,
        "measured": False,
        "source": "no ratio has been measured for this model; the o200k count is shown unscaled",
    }
    assert row["layer"] == "package" and row["read"] == "2026-12-02" and one["ledger"] is None
    (tmp_path / "toll.yaml").write_text(
        "version: 1\nmodels:\n  claude-sonnet-5: {prices: {input: 2.5}}\n"
        "  house-model: {provider: openai, window: 64000}\n",
        encoding="utf-8",
    )
    layered = json.loads(toll("models", "--json", cwd=tmp_path).stdout)
    layers = {row["name"]: row["layer"] for row in layered["models"]}
    assert layers["claude-sonnet-5"] == layers["house-model"] == "ledger"
    assert layers["grok-4.6"] == "package" and layered["ledger"] == "toll.yaml"
    text = toll("models", "claude-sonnet-5", cwd=tmp_path).stdout
    assert text.startswith("claude-sonnet-5 (anthropic) — answered by: ledger\n")
    assert "  prices:  input $2.5, output $10," in text
    unknown = toll("models", "my-local-llm", cwd=tmp_path)
    assert unknown.returncode == 0
    assert unknown.stdout.startswith("my-local-llm (unknown) — answered by: none\n")


def test_doctor_all_well_then_each_problem_with_its_fix(tmp_path: Path) -> None:
    (tmp_path / "transcripts").mkdir()
    (tmp_path / "transcripts" / "s.jsonl").write_text("{}\n", encoding="utf-8")
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "TOLL_TRANSCRIPTS": "transcripts"}
    (tmp_path / "toll.yaml").write_text("version: 1\n", encoding="utf-8")
    well = toll("doctor", cwd=tmp_path, env=env)
    assert well.returncode == 0, well.stdout + well.stderr
    statuses = [line.split()[:2] for line in well.stdout.splitlines() if not line.startswith(" ")]
    assert statuses == [
        ["ok", "vocabulary"],
        ["ok", "tiktoken"],
        ["ok", "counter"],
        ["ok", "fast"],
        ["ok", "transcript"],
        ["ok", "cache"],
        ["ok", "transcript"],
        ["ok", "ledger"],
    ]
    assert "(1 transcript files)" in well.stdout
    assert "typed: msgspec" in well.stdout
    (tmp_path / "blocked").write_text("a file, not a folder", encoding="utf-8")
    (tmp_path / "toll.yaml").write_text("version: 1\nmodels:\n  x: {window: 5}\n", encoding="utf-8")
    sick = toll(
        "doctor",
        "--json",
        cwd=tmp_path,
        env={"XDG_CACHE_HOME": str(tmp_path / "blocked"), "TOLL_TRANSCRIPTS": "nowhere"},
    )
    assert sick.returncode == 1, sick.stdout + sick.stderr
    checks = {check["check"]: check for check in json.loads(sick.stdout)["checks"]}
    assert checks["cache folder"]["status"] == "problem"
    assert "XDG_CACHE_HOME" in checks["cache folder"]["fix"]
    assert checks["transcript roots"]["status"] == "problem"
    assert "TOLL_TRANSCRIPTS" in checks["transcript roots"]["fix"]
    assert checks["ledger"]["status"] == "problem"
    assert "models.x: a new model needs a 'provider'" in checks["ledger"]["detail"]
    assert checks["vocabulary"]["status"] == checks["tiktoken identity"]["status"] == "ok"


def test_doctor_says_which_transcript_reader_is_in_use(tmp_path: Path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "TOLL_PARSER": "pure"}
    done = toll("doctor", "--json", cwd=tmp_path, env=env)
    checks = {check["check"]: check for check in json.loads(done.stdout)["checks"]}
    assert checks["transcript reader"]["status"] == "ok"
    assert checks["transcript reader"]["detail"].startswith("pure Python")
    assert "TOLL_PARSER=pure" in checks["transcript reader"]["detail"]


def test_doctor_says_which_counter_a_big_scan_counts_with(tmp_path: Path) -> None:
    """quicktok proven against the pinned probe counts; off when forced; absent, or installed
    but counting otherwise than tiktoken (a real package on the path, shadowing the real one):
    a big scan then counts with tiktoken, and doctor says so with the fix."""
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}

    def fast_counter(**extra: str) -> tuple[int, dict[str, str]]:
        done = toll("doctor", "--json", cwd=tmp_path, env={**env, **extra})
        checks = {check["check"]: check for check in json.loads(done.stdout)["checks"]}
        return done.returncode, checks["fast counter"]

    code, check = fast_counter(TOLL_COUNTER="")
    assert code == 0 and check["status"] == "ok"
    assert check["detail"].startswith("quicktok 0.4")
    assert "equal to tiktoken on 317 probe texts" in check["detail"]
    assert "from 16 MB unread per reading process" in check["detail"]

    code, check = fast_counter(TOLL_COUNTER="tiktoken")
    assert (code, check["status"], check["detail"]) == (
        0,
        "n/a",
        "off: tiktoken (TOLL_COUNTER=tiktoken)",
    )

    absent = tmp_path / "absent" / "quicktok"
    absent.mkdir(parents=True)
    (absent / "__init__.py").write_text("raise ImportError('not here')\n", encoding="utf-8")
    code, check = fast_counter(TOLL_COUNTER="", PYTHONPATH=str(absent.parent))
    assert (code, check["status"]) == (0, "n/a")
    assert check["detail"].startswith("tiktoken (quicktok not installed); big scans count with")
    assert check["fix"] == "pip install 'pytest-toll[fast]'"

    wrong = tmp_path / "wrong" / "quicktok"
    wrong.mkdir(parents=True)
    (wrong / "__init__.py").write_text(
        "__version__ = '9.9'\n"
        "class _Counter:\n"
        "    def count(self, text): return len(text)\n"
        "def get_encoding(name): return _Counter()\n",
        encoding="utf-8",
    )
    code, check = fast_counter(TOLL_COUNTER="", PYTHONPATH=str(wrong.parent))
    assert (code, check["status"]) == (1, "problem")
    assert check["detail"].startswith("tiktoken (quicktok 9.9 counts ")
    assert "where tiktoken counts" in check["detail"]
    assert "TOLL_COUNTER=tiktoken" in check["fix"]


def test_selfcheck_refuses_an_altered_vocabulary(altered_vocabulary: Path) -> None:
    result = selfcheck.vocabulary_hash(altered_vocabulary)
    assert not result.ok and "expected 446a9538" in result.detail
    assert selfcheck.identity_with_tiktoken().ok

"""Measuring a skills catalogue against raw tiktoken counting the same strings, in one run.

    python bench/skills.py [--skills N] [--repeats N]

Generates a catalogue of N skills (default 200) in a temporary folder: each with a
frontmatter, a body of 30-120 lines linking three reference files (one of them a binary
asset) and a few bare ``scripts/`` paths. Every text is unique, so the count cache cannot
flatter us. Prints:

- raw ``encode_ordinary`` time over exactly the strings the report counts (each metadata
  line, body and text reference) / ``measure_skills`` time on cold caches: the share of the
  measure that is tokenizing (1.0 would mean discovery, reading, YAML, link scanning,
  containment checks and the S rules cost nothing);
- the same ratio with the count cache warm (a second measure of an unchanged catalogue);
- the per-skill overhead in milliseconds (measure minus raw tokenizing, divided by N).

Times are the process's CPU seconds, not wall-clock: on a shared machine a wall-clock
ratio measures the neighbours too. The load average is printed beside them.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

from pytest_toll.core import tokens
from pytest_toll.skills.measuring import measure_skills
from pytest_toll.skills.parse import normalize_newlines
from pytest_toll.skills.records import metadata_text

WORDS = (
    "read the invoice then check each line against the ledger and report any total that "
    "differs from the purchase order with the supplier name date and amount in a table"
).split()


def sentence(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def make_catalogue(root: Path, count: int, seed: int = 11) -> None:
    rng = random.Random(seed)
    for serial in range(count):
        name = f"skill-{serial:04d}"
        folder = root / ("team-a" if serial % 2 else "team-b") / name
        (folder / "references").mkdir(parents=True)
        (folder / "scripts").mkdir()
        (folder / "assets").mkdir()
        description = (
            f"{sentence(rng, 8, 30).capitalize()} (#{serial}). "
            f"Use when the user asks to {sentence(rng, 3, 8)}."
        )
        lines = [f"# {name}", ""]
        for step in range(rng.randint(30, 120)):
            lines.append(f"{step + 1}. {sentence(rng, 5, 20)}.")
        lines[5] = "Read [the guide](references/guide.md) and references/fields.md first."
        lines[9] = "Run `python scripts/check.py --strict` and attach ![logo](assets/logo.png)."
        body = "\n".join(lines) + "\n"
        (folder / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: {description}\n"
            f'metadata:\n  owner: team-{serial % 7}\n  version: "1.{serial}"\n---\n{body}',
            encoding="utf-8",
        )
        for reference in ("guide", "fields"):
            text = "\n".join(
                f"- {serial} {sentence(rng, 6, 25)}" for _ in range(rng.randint(20, 80))
            )
            (folder / "references" / f"{reference}.md").write_text(text, encoding="utf-8")
        (folder / "scripts" / "check.py").write_text(
            f"import sys\n\nSERIAL = {serial}\nprint(sys.argv[1:], SERIAL)\n", encoding="utf-8"
        )
        (folder / "assets" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0" + rng.randbytes(512))


def counted_strings(root: Path) -> list[str]:
    """Exactly the texts a report counts: metadata lines, bodies, text references and the
    source of the scripts a skill runs (its executed part)."""
    texts: list[str] = []
    for skill in measure_skills(root).skills:
        texts.append(metadata_text(skill.name, skill.description))
        texts.append(skill.body_text)
        for reference in (*skill.references, *skill.executed):
            if not reference.binary:
                path = Path(skill.path) / reference.path
                texts.append(normalize_newlines(path.read_text(encoding="utf-8")))
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skills", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    encoding = tokens.encoding()  # load the vocabulary before timing anything
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        make_catalogue(root, args.skills)
        texts = counted_strings(root)
        raw_times, cold_times, warm_times = [], [], []
        for _ in range(args.repeats):
            began = time.process_time()
            for text in texts:
                encoding.encode_ordinary(text)
            raw_times.append(time.process_time() - began)
            tokens._cache.clear()
            began = time.process_time()
            report = measure_skills(root)
            cold_times.append(time.process_time() - began)
            began = time.process_time()
            measure_skills(root)
            warm_times.append(time.process_time() - began)
        raw = statistics.median(raw_times)
        cold = statistics.median(cold_times)
        warm = statistics.median(warm_times)
    characters = sum(map(len, texts))
    print(
        f"catalogue: {len(report.skills)} skills, {len(texts):,} counted texts, "
        f"{characters / 1e6:.2f} M chars, {sum(report.totals.values()):,} tokens, "
        f"{len(report.findings)} findings"
    )
    print(f"raw tiktoken time / measure_skills time (cold cache): {raw / cold:.3f}")
    print(f"raw tiktoken time / measure_skills time (warm cache): {raw / warm:.3f}")
    print(
        f"overhead beyond tokenizing: {1000 * (cold - raw) / len(report.skills):.2f} ms per skill "
        f"(cold), {1000 * warm / len(report.skills):.2f} ms per skill with a warm cache"
    )
    print("CPU seconds; load average " + " ".join(f"{load:.2f}" for load in os.getloadavg()))


if __name__ == "__main__":
    main()

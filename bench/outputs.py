"""How much the CI outputs cost at session end, as ratios to writing the JSON report.

The plugin already serialises the session report to JSON (``--toll-json``); every other
output (step summary, annotations, SARIF, badge) is rendered from the same dict. This
measures each renderer on a large generated report against ``json.dumps`` of that report in
the same process, in CPU seconds (best of several rounds), so a ratio near 1 means "as cheap
as the JSON the run writes anyway".

    python bench/outputs.py [--entries N] [--parts N] [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable

from pytest_toll.report import badge, github, github_run, markdown, sarif
from pytest_toll.report.data import EntryResult, Outcome, PartResult, ReportDict, SessionReport

OUTCOMES: tuple[Outcome, ...] = (
    "passed",
    "passed",
    "passed",
    "improved",
    "regressed",
    "over_budget",
    "new",
)


def make_report(entries: int, parts: int) -> ReportDict:
    report = SessionReport(ledger="toll.yaml", window=1_000_000, tolerance=0)
    report.add(
        EntryResult(
            kind="servers" if index % 3 else "skills",
            name=f"entry_{index}_with_a_realistic_name",
            nodeid=f"toll.yaml::servers::entry_{index}",
            line=index * 4 + 8,
            measured=1000 + index,
            method="o200k",
            pin=1000 + index - (index % 7) + 3,
            budget=5000,
            outcome=OUTCOMES[index % len(OUTCOMES)],
            failed=OUTCOMES[index % len(OUTCOMES)] in ("regressed", "over_budget"),
            message="regressed by 3 tok against the pin" if index % 7 == 4 else "",
            findings=[
                {"rule": "E122", "severity": "warn", "subject": f"tool_{index}", "message": "thin"}
            ]
            if index % 5 == 0
            else [],
            parts=[
                PartResult(f"tool_{part}", 40 + part, 40 + part - (part % 3))
                for part in range(parts)
            ],
        )
        for index in range(entries)
    )
    return report.as_dict()


def best_cpu(action: Callable[[], object], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        action()
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=5000)
    parser.add_argument("--parts", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    report = make_report(options.entries, options.parts)
    baseline = best_cpu(lambda: json.dumps(report, indent=2), options.rounds)
    cases: dict[str, Callable[[], object]] = {
        "step summary (markdown, 1 MiB cap)": lambda: markdown.render(
            report, github.STEP_SUMMARY_LIMIT_BYTES
        ),
        "markdown, uncapped": lambda: markdown.render(report),
        "annotations (capped at 10 a level)": lambda: github.render_annotations(
            github_run.entry_annotations(report, "toll.yaml")
        ),
        "SARIF (json.dumps included)": lambda: json.dumps(
            sarif.render(report, "toll.yaml"), indent=2
        ),
        "badge (SVG + endpoint JSON)": lambda: badge.badge_for(report).svg(),
    }
    print(
        f"{options.entries:,} entries × {options.parts} parts; baseline json.dumps(report) "
        f"{baseline * 1000:.1f} ms CPU (best of {options.rounds}); load average "
        f"{os.getloadavg()[0]:.2f}"
    )
    for name, action in cases.items():
        seconds = best_cpu(action, options.rounds)
        print(f"  {name:<38} {seconds / baseline:7.3f}× the JSON report")


if __name__ == "__main__":
    main()

"""The transcripts job's text view: ``toll scan`` prints exactly what ``transcripts/render.py``
makes of the (top rows of the) report."""

from __future__ import annotations

from pytest_toll.transcripts.render import render_scan
from pytest_toll.transcripts.scan import ReadOptions, scan
from tests.cli import run_toll as toll
from tests.transcripts.transcripts_data import FIXTURES


def test_scan_prints_the_view_of_its_report() -> None:
    report = scan([FIXTURES], ReadOptions(workers=1)).top(3)
    printed = toll("scan", "--root", str(FIXTURES), "--no-cache", "--top", "3", "--workers", "1")
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout == render_scan(report) + "\n"
    lines = printed.stdout.splitlines()
    assert lines[0].startswith(f"{report.calls:,} tool calls in {report.sessions:,} sessions")
    header = lines.index(next(line for line in lines if line.startswith("shape ")))
    assert [line.split()[0] for line in lines[header + 1 : header + 4]] == [
        row.shape.split()[0] for row in report.shapes
    ]

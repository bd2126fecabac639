"""Start-up time of the command: each subcommand's --help and a default `render`, against `python -c pass`.

Each command runs as a whole process (the interpreter's own start included), several times; the median is
printed, and the time above the bare interpreter. Targets: `gpushare --help` <= 0.15 s, a default render
<= 0.5 s, on the 2-core machine.
Usage: python benchmarks/startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COMMANDS = ("render", "place", "inspect", "validate", "preflight", "rules")
TARGETS = {"gpushare --help": 0.15, "gpushare render (default chart)": 0.5}


def timed(argv: list[str], runs: int, cwd: Path) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs per command (the median is printed)")
    args = parser.parse_args()
    python = [sys.executable]
    gpushare = [*python, "-m", "gpushare"]
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        rows: list[tuple[str, float]] = [("python -c pass", timed([*python, "-c", "pass"], args.runs, work))]
        rows.append(("gpushare --help", timed([*gpushare, "--help"], args.runs, work)))
        rows += [(f"gpushare {c} --help", timed([*gpushare, c, "--help"], args.runs, work)) for c in COMMANDS]
        renders = []
        for i in range(args.runs):  # a new output directory each time: render refuses to write over others' files
            started = time.perf_counter()
            subprocess.run([*gpushare, "render", "-o", f"chart-{i}", "-q"], cwd=work, check=True)
            renders.append(time.perf_counter() - started)
        rows.append(("gpushare render (default chart)", statistics.median(renders)))
    base = rows[0][1]
    print(f"{'command':<34} {'median s':>9} {'above python':>13} {'target':>8}")
    for name, seconds in rows:
        target = TARGETS.get(name)
        verdict = "" if target is None else f"{'<=' if seconds <= target else '>'} {target:.2f}"
        print(f"{name:<34} {seconds:>9.3f} {seconds - base:>13.3f} {verdict:>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

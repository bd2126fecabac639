"""Render the whole settings matrix in-process, both output forms, and print the time.

Matrix: every minor 1.20-1.28 (plus the universal chart) x profile x isolation modes x memory unit x
scheduler mode, as `gpushare.matrix.combos` enumerates the valid ones. Target: under 3 s on 2 cores.
Usage: python benchmarks/render_matrix.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpushare import render
from gpushare.domain.versions import MINORS
from gpushare.generate.matrix import combos


def once(documents: list[dict]) -> tuple[float, int, int]:
    started = time.perf_counter()
    renders = objects = 0
    for doc in documents:
        for fmt in ("chart", "manifests"):
            if fmt == "manifests" and "kubernetesVersion" not in doc and doc["scheduler"]["mode"] != "managed":
                continue  # a universal stack is a chart only
            rendered = render(doc, format=fmt)  # type: ignore[arg-type]
            renders += 1
            objects += len(rendered.objects)
    return time.perf_counter() - started, renders, objects


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    documents = list(combos()) + list(combos((None,)))
    once(documents[:5])  # warm imports and caches
    times = []
    for _ in range(args.repeat):
        elapsed, renders, objects = once(documents)
        times.append(elapsed)
    print(f"settings combinations: {len(documents)} ({len(MINORS)} minors + universal)")
    print(f"renders per run: {renders} (chart and manifests), objects per run: {objects}")
    print(
        f"matrix render time: best {min(times):.2f}s, median {statistics.median(times):.2f}s "
        f"over {args.repeat} runs (target < 3 s)"
    )
    print(f"per render: {min(times) / renders * 1000:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The parts of a large `place` and `validate` timed alone, in one process, on the files `inputs.py` generates:
how fast any arrangement of them could be on this machine.

`inputs.py` times whole processes. This script times what they are made of, each on its own with Python's cyclic
collector paused (as the commands run):

- decode: the fastest decoders measured, on the items already cut out of the file, objects kept, one core. JSON:
  msgspec, decoding only the pod's fields (`gpushare.kube.shapes`). YAML: rapidyaml's parse and JSON emit (as the
  reader drives it, `listing.RapidYaml`), then the same msgspec decode; this leaves out the guard that makes the
  reader exact (an item PyYAML would type differently goes to PyYAML), so it is less than an exact reader pays;
- read: gpushare's reader as the commands run it (both cores for a large List), for comparison;
- model: the inventory `place` builds from what was read (one core);
- engine: the placement alone. It is sequential by design, as kube-scheduler's queue: each pod sees the pods
  bound before it;
- rules: `validate`'s rules on what was read (one core).

The ceiling is the rate with both cores busy all the time and nothing paid to hand work between them, from these
parts as they are: place, items / max(engine, (decode + model + engine) / 2); validate, items /
((decode + rules) / 2). A target above its ceiling needs faster parts (a faster decoder, a faster engine), not a
better arrangement of them.
Usage: python benchmarks/ceiling.py [--pods 100000] [--nodes 2000] [--dir DIR] (the inputs are inputs.py's, made
once under --dir)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent))  # inputs.py, beside this file

import inputs  # the generated files are shared with inputs.py

T = TypeVar("T")


def timed(work: Callable[..., T], *args: Any) -> tuple[T, float]:
    from gpushare import process

    with process.paused():
        started = time.perf_counter()
        result = work(*args)
        return result, time.perf_counter() - started


def item_texts(path: Path) -> list[bytes]:
    """Each List item's text, cut as gpushare's reader cuts it (one core)."""
    from gpushare.kube import listing

    data = path.read_bytes()
    if path.suffix == ".json":
        found = listing.json_list(data)
        if found is None:
            raise SystemExit(f"{path}: not a List as kubectl writes it")
        items: Iterator[listing.Item] = listing.json_items(data, found.between, found.spans, 1)
    else:
        cut = listing.yaml_list(data)
        if cut is None:
            raise SystemExit(f"{path}: not a List as kubectl writes it")
        items = listing.yaml_items(data, cut[1], 1)
    return [bytes(item.text) for item in items]


def decode_json(texts: list[bytes]) -> list[Any]:
    from gpushare.kube import listing

    return [listing.decode(text, "Pod") for text in texts]


def decode_yaml(texts: list[bytes]) -> list[Any]:
    from gpushare.kube import listing

    reader, kept = listing.RapidYaml(), []
    try:
        for text in texts:
            read = reader.json(text)
            if read is None:
                raise SystemExit("rapidyaml refused an item")
            kept.append(listing.decode(*read))
    finally:
        reader.close()
    return kept


def measure(fmt: str, decode: Callable[[list[bytes]], list[Any]], files: dict[str, Path], count: int) -> str:
    """One format's parts timed, and the ceilings they allow."""
    from gpushare.kube.documents import read_documents
    from gpushare.placement import Semantics, Simulation
    from gpushare.policy.engine import ClusterFacts
    from gpushare.policy.validate import validate

    semantics = Semantics("upstream", gpu_memory_unit="GiB", scheduler_name="default-scheduler")
    texts = item_texts(files[f"pods.{fmt.lower()}"])
    _, decoding = timed(decode, texts)
    del texts
    nodes = read_documents(files[f"nodes.{fmt.lower()}"])
    pods, reading = timed(read_documents, files[f"pods.{fmt.lower()}"])
    simulation, modelling = timed(Simulation.from_sources, nodes, [], list(pods), semantics, "GiB")
    _, placing = timed(simulation.run)
    del simulation
    _, ruling = timed(validate, pods, ClusterFacts()) if fmt == "YAML" else (None, 0.0)
    ceiling = count / max(placing, (decoding + modelling + placing) / 2)
    line = f"{fmt:<6} {decoding:>7.2f} {reading:>6.2f} {modelling:>6.2f} {placing:>7.2f} {ruling:>6.2f}   "
    line += f"place {ceiling:,.0f} pods/s ({inputs.TARGETS[f'place, {fmt}']:,})"
    if ruling:
        line += f", validate {count / ((decoding + ruling) / 2):,.0f} objects/s ({inputs.TARGETS['validate, YAML']:,})"
    return line


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=100_000)
    parser.add_argument("--nodes", type=int, default=2_000)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "gpushare-bench-inputs")
    args = parser.parse_args()
    files = inputs.generate(args.dir.resolve(), args.nodes, args.pods)
    print(f"{args.pods:,} pods on {args.nodes:,} nodes, files in {args.dir}; seconds, collector paused\n")
    print(f"{'format':<6} {'decode':>7} {'read':>6} {'model':>6} {'engine':>7} {'rules':>6}   ceiling (target)")
    for fmt, decode in (("JSON", decode_json), ("YAML", decode_yaml)):
        print(measure(fmt, decode, files, args.pods), flush=True)
    return 0


if __name__ == "__main__":
    inputs.run(main)

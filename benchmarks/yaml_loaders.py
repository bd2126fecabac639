"""The YAML loaders gpushare could read kubectl's files with, on the same file: what picked rapidyaml.

Reads the pods file `benchmarks/inputs.py` generates (kubectl's YAML layout) with each loader and prints MB/s
and pods/s:

- PyYAML's C loader (libyaml), the whole List as one document: the strict reader, and the only one here that
  refuses duplicate keys and types scalars as YAML 1.1 (as kubectl's Go reader does);
- yaml-rs (if installed; not a dependency): a Rust loader, YAML 1.2, the whole document;
- rapidyaml as gpushare's List reader uses it: each item parsed into one reused tree, emitted as JSON and
  decoded by msgspec into the fields gpushare keeps, after the YAML 1.1/1.2 guard;
- the List reader end to end (`gpushare.kube.documents.read_documents`).

Usage: python benchmarks/yaml_loaders.py [--pods 2500] [--dir DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).parent))
from inputs import generate

from gpushare.kube import documents, listing


def timed(load: Callable[[], Any]) -> float:
    started = time.perf_counter()
    load()
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=2_500)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "gpushare-bench-inputs")
    args = parser.parse_args()
    path = generate(args.dir, 2_000, args.pods)["pods.yaml"]
    data = path.read_bytes()
    mb = len(data) / 1e6
    loaders: list[tuple[str, Callable[[], Any]]] = [
        ("PyYAML C loader (whole document)", lambda: yaml.load(data, Loader=yaml.CSafeLoader)),
    ]
    try:
        import yaml_rs

        text = data.decode()
        loaders.append(("yaml-rs (whole document)", lambda: yaml_rs.loads(text)))
    except ImportError:
        print("yaml-rs is not installed (pip install yaml-rs to compare it)")
    found = listing.yaml_list(data)
    assert found is not None, "not in kubectl's layout"
    loaders += [
        ("rapidyaml + msgspec, item by item", lambda: list(listing.yaml_items(data, found[1], 1))),
        ("gpushare's List reader, end to end", lambda: documents.read_documents(path)),
    ]
    print(f"{path}: {mb:.1f} MB, {args.pods:,} pods")
    for name, load in loaders:
        seconds = min(timed(load) for _ in range(2))
        print(f"{name:<38} {seconds:>7.2f} s {mb / seconds:>7.1f} MB/s {args.pods / seconds:>9,.0f} pods/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

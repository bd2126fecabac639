"""`gpushare place`: where would these pods land on this fleet, what stays pending, and why; as a table, JSON, the
`kubectl inspect gpushare` view or a picture, or several variants of the semantics side by side."""

from __future__ import annotations

import argparse
import itertools
import random
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from gpushare.commands import fleet
from gpushare.domain.labels import PLACEMENTS
from gpushare.domain.products import MIB_PER_UNIT
from gpushare.errors import InputError
from gpushare.placement import (
    MAX_NODES,
    QUEUE_MODES,
    PlacementResult,
    Sampled,
    Semantics,
    Simulation,
    plot_target,
    write,
    write_comparison,
    write_plot,
)
from gpushare.progress import wanted

#: The unit the cluster schedules GPU memory in. Unlike `--gpu-memory-unit` (the unit the files' numbers are in),
#: comparing it converts every request and capacity from the files' unit into each one, rounding as the device
#: plugin and the pods' authors would (a 16 GiB request asks 128 units of 128 MiB).
SCHEDULING_UNIT = "scheduling-unit"
#: `--compare` key -> (Semantics field, allowed values)
COMPARE_KEYS: dict[str, tuple[str, tuple[str, ...]]] = {
    "placement": ("placement", PLACEMENTS),
    "semantics": ("name", fleet.SEMANTICS),
    SCHEDULING_UNIT: ("gpu_memory_unit", tuple(MIB_PER_UNIT)),
}
#: `--compare` keys that meant something else before, and what to write now.
RENAMED = {"gpu-memory-unit": SCHEDULING_UNIT}


def add_arguments(p: argparse.ArgumentParser, command: str) -> None:
    fleet.add_placement_run(p, ("table", "json", "inspect"))
    p.add_argument("workloads", nargs="*", help="Pods and controllers to place: files, directories, -")
    p.add_argument("--node-order", metavar="FILE", help="replay: 'namespace/name node' per line fixes each pod's node")
    p.add_argument(
        "--compare",
        action="append",
        default=[],
        metavar="KEY=V1,V2",
        help="run each variant and print them side by side (placement, semantics, scheduling-unit: the unit the "
        "cluster schedules in, the files' numbers converted from --gpu-memory-unit)",
    )
    p.add_argument("--plot", metavar="FILE.png|FILE.svg", help="write a per-GPU allocation picture")
    p.add_argument(
        "--explain", action="store_true", help="for each pending pod, every node and why the pod does not fit it"
    )
    p.add_argument(
        "--queue",
        choices=QUEUE_MODES,
        default="auto",
        help="which pods wait in kube-scheduler's queue together, leaving it by priority then creation time: auto "
        "(default) those with a metadata.creationTimestamp (pods that exist: a snapshot's pending pods), the others "
        "arriving one by one in the files' order; together: every pod (a backlog, kube-scheduler down); arrival: "
        "every pod in the files' order",
    )
    fleet.add_runs(
        p,
        "also place the pods K more times with the nodes listed in random orders (as kube-scheduler before "
        "1.27 and from 1.35 lists them after each start) and ties broken at random, and say how often each pod "
        "landed where the dry run put it (upstream semantics; slower)",
    )
    p.add_argument("--engine", choices=("auto", "fast", "reference"), default="auto", help=argparse.SUPPRESS)


def main(args: argparse.Namespace) -> int:
    return place(args, sys.stdout)


def place(args: argparse.Namespace, out: TextIO) -> int:
    """Check what needs no input first, read, run once per variant, print in the chosen form; exit 1 when any pod
    was invalid."""
    req = fleet.request_of(args)
    specs = parse_compare(args.compare)
    if args.plot:
        plot_target(args.plot)  # a name it cannot take, or a file of the user's there: refused before any work
    order = read_node_order(args.node_order) if args.node_order else None
    inputs = fleet.read_inputs(req)
    base, notes = fleet.semantics_of(req, inputs)
    input_unit = req.input_unit or req.semantics.gpu_memory_unit

    def once(semantics: Semantics, last: bool = False, nodes_seed: int | None = None) -> PlacementResult:
        # the last run lets go of the objects read as they are modelled: memory for one of them, not for both
        nodes = inputs.nodes
        if nodes_seed is not None:  # the nodes as a start of kube-scheduler may list them
            nodes = random.Random(nodes_seed).sample(nodes, len(nodes))
        simulation = Simulation.from_sources(
            nodes, inputs.existing, inputs.workloads, semantics, input_unit, consume=last
        )
        if last:
            inputs.nodes, inputs.existing = [], []
        result = simulation.run(
            engine=args.engine,
            node_order=order,
            explain=args.explain,
            show_progress=wanted(req.quiet),
            queue=args.queue,
        )
        result.warnings[:0] = [*notes, *inputs.notes]
        return result

    if args.runs and (specs or order):
        raise InputError("--runs", args.runs, "a run without --compare and --node-order (each fixes what it samples)")
    if specs:
        rows = [(name, semantics, once(semantics)) for name, semantics in variants(base, specs)]
        converted = any(key == SCHEDULING_UNIT for key, _ in specs)
        note = (
            f"{SCHEDULING_UNIT}: the files' numbers are in {input_unit} (--gpu-memory-unit); each variant converts "
            "them into its unit"
        )
        write_comparison(rows, args.output, out, input_unit if converted else None, note if converted else "")
        return 1 if any(r.invalid or r.findings for _, _, r in rows) else 0
    result = once(base, last=not args.runs)
    if args.runs:
        sample(result, args.runs, lambda seed: once(replace(base, tie_seed=seed), nodes_seed=seed))
    if args.plot:
        written = write_plot(result, args.plot)
        nodes = sum(1 for n in result.nodes if n.gpus)
        drawn = f"the first {MAX_NODES} of {nodes}" if nodes > MAX_NODES else str(nodes)
        print(f"gpushare: wrote {written} ({drawn} GPU nodes)", file=sys.stderr)
    write(result, args.output, out)
    return 1 if result.invalid or result.findings else 0


def sample(result: PlacementResult, runs: int, run: Callable[[int], PlacementResult]) -> None:
    """`--runs`: each pod's outcome over `runs` more runs (seeds 1..runs), against the dry run's, kept in `result`."""
    mine = {a.key: a.node for a in result.placements}
    pods = [(a.namespace, a.name) for a in result.placements] + [(p.namespace, p.name) for p in result.pending]
    keys = [f"{namespace}/{name}" for namespace, name in pods]
    counts = {key: [0, 0, 0] for key in keys}  # same, elsewhere, pending
    outcomes: dict[str, Counter[str]] = {key: Counter() for key in keys}  # node ("": pending) -> runs
    for seed in range(1, runs + 1):
        other = run(seed)
        landed = {a.key: a.node for a in other.placements}
        for key in keys:
            node = landed.get(key)
            counts[key][0 if node == mine.get(key) else 2 if node is None else 1] += 1
            outcomes[key][node or ""] += 1
    result.sampled_runs = runs
    result.sampled = []
    for (namespace, name), key in zip(pods, keys, strict=True):
        same, elsewhere, pending = counts[key]
        likely, likely_runs = min(outcomes[key].items(), key=lambda o: (-o[1], o[0]))
        result.sampled.append(
            Sampled(namespace, name, mine.get(key, ""), same, elsewhere, pending, likely, likely_runs)
        )


def parse_compare(specs: list[str]) -> list[tuple[str, list[str]]]:
    """`key=v1,v2` strings -> (key, values); an unknown key or value is an InputError."""
    result = []
    for spec in specs:
        key, sep, values = spec.partition("=")
        if key in RENAMED:
            raise InputError(
                "--compare",
                spec,
                f"{RENAMED[key]}={values} to compare the unit the cluster schedules in (requests converted from "
                "--gpu-memory-unit, the unit of the files' numbers)",
            )
        if not sep or key not in COMPARE_KEYS:
            raise InputError("--compare", spec, f"KEY=V1,V2 with KEY one of {', '.join(COMPARE_KEYS)}")
        allowed = COMPARE_KEYS[key][1]
        words = [v.strip() for v in values.split(",") if v.strip()]
        bad = [w for w in words if w not in allowed]
        if bad or not words:
            raise InputError(f"--compare {key}", values, f"values among {', '.join(allowed)}")
        result.append((key, words))
    return result


def variants(base: Semantics, specs: list[tuple[str, list[str]]]) -> list[tuple[str, Semantics]]:
    """Every combination of the compared values, named like `placement=spread,scheduling-unit=128MiB`."""
    keys = [k for k, _ in specs]
    result = []
    for combo in itertools.product(*(v for _, v in specs)):
        fields: dict[str, Any] = {COMPARE_KEYS[k][0]: v for k, v in zip(keys, combo, strict=True)}
        result.append((",".join(f"{k}={v}" for k, v in zip(keys, combo, strict=True)), replace(base, **fields)))
    return result


def read_node_order(path: str) -> dict[str, str]:
    """`namespace/name node` per line (# comments): the node a real scheduler chose for each pod."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError("--node-order", path, f"a readable file ({exc.strerror})") from None
    order: dict[str, str] = {}
    for number, line in enumerate(lines, start=1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        words = text.split()
        if len(words) != 2 or "/" not in words[0]:
            raise InputError("--node-order", line, f"'namespace/name node' ({path}:{number})")
        order[words[0]] = words[1]
    return order

"""`gpushare inspect`: each node's GPU memory allocated and total from the pods running, as `kubectl inspect
gpushare` shows it (the running pods only: where new pods would go is `place`'s question)."""

from __future__ import annotations

import argparse
import sys

from gpushare.commands import fleet
from gpushare.commands.arguments import add_quiet
from gpushare.placement import Simulation, write
from gpushare.progress import wanted


def add_arguments(p: argparse.ArgumentParser, command: str) -> None:
    fleet.add_fleet(p)
    fleet.add_semantics(p)
    add_quiet(p)
    p.add_argument("-o", "--output", choices=("table", "json", "inspect"), default="inspect", help="output form")


def main(args: argparse.Namespace) -> int:
    req = fleet.request_of(args)
    inputs = fleet.read_inputs(req)
    semantics, notes = fleet.semantics_of(req, inputs)
    simulation = Simulation.from_sources(inputs.nodes, inputs.existing, [], semantics, req.input_unit, consume=True)
    result = simulation.run(show_progress=wanted(req.quiet))
    result.warnings[:0] = [*notes, *inputs.notes]
    write(result, args.output, sys.stdout)
    return 1 if result.invalid else 0

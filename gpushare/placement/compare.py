"""`--compare key=v1,v2`: the same workload under each variant, side by side."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

from gpushare.domain.labels import PLACEMENTS
from gpushare.domain.profiles import MIB_PER_UNIT
from gpushare.errors import InputError
from gpushare.placement.model import Semantics

#: The unit the cluster schedules GPU memory in. Unlike `--gpu-memory-unit` (the unit the files' numbers are in),
#: comparing it converts every request and capacity from the files' unit into each one, rounding as the device
#: plugin and the pods' authors would (a 16 GiB request asks 128 units of 128 MiB).
SCHEDULING_UNIT = "scheduling-unit"
#: compare key -> (Semantics field, allowed values)
KEYS: dict[str, tuple[str, tuple[str, ...]]] = {
    "placement": ("placement", PLACEMENTS),
    "semantics": ("name", ("ack", "upstream")),
    SCHEDULING_UNIT: ("gpu_memory_unit", tuple(MIB_PER_UNIT)),
}
#: Keys that meant something else before, and what to write now.
RENAMED = {"gpu-memory-unit": SCHEDULING_UNIT}


def parse(specs: list[str]) -> list[tuple[str, list[str]]]:
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
        if not sep or key not in KEYS:
            raise InputError("--compare", spec, f"KEY=V1,V2 with KEY one of {', '.join(KEYS)}")
        allowed = KEYS[key][1]
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
        fields: dict[str, Any] = {KEYS[k][0]: v for k, v in zip(keys, combo, strict=True)}
        result.append((",".join(f"{k}={v}" for k, v in zip(keys, combo, strict=True)), replace(base, **fields)))
    return result

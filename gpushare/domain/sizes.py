"""Bounds on sizes: past them a number a file may hold is no fleet's, and the rules say so with the bound."""

from __future__ import annotations

from gpushare.domain.products import MIB_PER_UNIT, UNIT_MIB

#: Pods one dry run places at most, and so the replicas a workload may ask before `validate` calls it absurd: far
#: beyond any fleet (Kubernetes' largest tested clusters run 150,000 pods; 64k GPUs x 16 pods is ~1M), well within
#: memory.
MAX_PODS = 5_000_000
#: GPU memory one GPU may hold before a number is taken for a mistake: 1 TiB, over three times the largest GPUs
#: made (288 GB of HBM3e: NVIDIA B300, AMD MI355X).
GPU_MEMORY_BOUND_MIB = 1024 * 1024


def gpu_memory_bound(unit: str | None) -> int:
    """The bound in `unit`s of aliyun.com/gpu-mem; with no unit known, in the smallest (MiB), so that no unit's
    real GPU is flagged."""
    return GPU_MEMORY_BOUND_MIB // MIB_PER_UNIT[unit or UNIT_MIB]


def bound_words(unit: str | None) -> str:
    """The bound as a finding says it: 'at most 1,024 per GPU (1 TiB in 1GiB units, ...)'."""
    return (
        f"at most {gpu_memory_bound(unit):,} per GPU (1 TiB in {unit or UNIT_MIB} units, over three times the "
        "largest GPU made)"
    )

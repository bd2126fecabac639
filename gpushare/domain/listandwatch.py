"""How large the open-source device plugin's device list grows in MiB units, and kubelet's bound on it (fact 11).

The open-source plugin lists one device per unit of each GPU (the first GPU's memory counts for every GPU), each
named `<GPU UUID>-_-<n>`, and sends the whole list in one ListAndWatch reply. Kubelet's device manager dials the
plugin without raising gRPC's receive bound (4 MiB by default; 1.20-1.36 alike), so a larger reply fails:
kubelet marks the resource unhealthy and the node reports `aliyun.com/gpu-mem: 0`. In GiB units the list is 1,024
times shorter and never comes near the bound. The sizes below are protobuf's encoding of that reply; upstream
reports of the failure (8 GPUs of 12,196 MiB: 5,862,768 bytes; 1 GPU of 81,920 MiB: 4,986,010) are reproduced
exactly by it.
"""

from __future__ import annotations

from functools import cache
from typing import Final

#: Why GS123 and GN312 warn, as `gpushare rules` prints it.
EXPLANATION: Final = (
    "In MiB units the open-source device plugin lists one device per MiB of each GPU (the first GPU's memory "
    "counts for every GPU) in one ListAndWatch reply; kubelet's device manager reads it with gRPC's default bound "
    "of 4 MiB (1.20-1.36), so a larger list fails, kubelet marks aliyun.com/gpu-mem unhealthy and the node reports "
    "0. Each device costs 56 bytes plus its number's digits; upstream reports of the failure (8 GPUs of 12,196 MiB: "
    "5,862,768 bytes; 1 GPU of 81,920 MiB: 4,986,010) match this count exactly."
)
#: gRPC's default bound on a message a client receives; kubelet's device-plugin client keeps it.
KUBELET_RECEIVE_BOUND: Final = 4 * 1024 * 1024
#: An NVIDIA GPU UUID as NVML writes it: "GPU-" and 36 characters of a UUID.
UUID_LENGTH: Final = len("GPU-") + 36
#: Between the GPU's UUID and the unit's number in a device ID.
SEPARATOR: Final = "-_-"
#: The health every listed device starts with.
HEALTHY: Final = "Healthy"


def _varint_length(value: int) -> int:
    return max(1, (value.bit_length() + 6) // 7)


def _field_length(payload: int) -> int:
    """A length-delimited protobuf field: one byte of tag, the length as a varint, the payload."""
    return 1 + _varint_length(payload) + payload


def device_bytes(digits: int) -> int:
    """One Device entry of the reply (ID and health; no topology) whose unit number has `digits` digits."""
    body = _field_length(UUID_LENGTH + len(SEPARATOR) + digits) + _field_length(len(HEALTHY))
    return _field_length(body)


def reply_bytes(gpus: int, units_per_gpu: int) -> int:
    """The ListAndWatch reply of a node with `gpus` GPUs of `units_per_gpu` units each."""
    total, start, digits = 0, 0, 1
    while start < units_per_gpu:
        end = min(units_per_gpu, 10**digits)
        total += (end - start) * device_bytes(digits)
        start, digits = end, digits + 1
    return gpus * total


def over_bound(gpus: int, units_per_gpu: int) -> bool:
    return reply_bytes(gpus, units_per_gpu) > KUBELET_RECEIVE_BOUND


@cache
def largest_per_gpu(gpus: int) -> int:
    """The most units per GPU a node with `gpus` GPUs can list before kubelet refuses the reply."""
    low, high = 0, KUBELET_RECEIVE_BOUND
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if not over_bound(gpus, middle) else (low, middle - 1)
    return low


def examples(counts: tuple[int, ...] = (1, 2, 4, 8)) -> str:
    """The bound for common GPU counts, as users compare it with their nodes."""
    parts = [f"{n} x {largest_per_gpu(n):,}" for n in counts]
    return ", ".join(parts[:-1]) + f" or {parts[-1]}" if len(parts) > 1 else parts[0]

"""kubelet's own device-plugin client, reading the open-source plugin's MiB device list from kubelet's own stub
plugin, fails exactly where gpushare's account of the list's size says it does (fact 11: GS123, GN312)."""

from __future__ import annotations

import json
import subprocess

import pytest
from toolchain import DEVICELIST, need_tool

from gpushare.domain import listandwatch

pytestmark = pytest.mark.e2e


def read_by_kubelet(gpus: int, per_gpu: int) -> dict[str, object]:
    done = subprocess.run(
        [str(need_tool(DEVICELIST)), str(gpus), str(per_gpu)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize("gpus", [1, 8])
def test_kubelet_reads_the_largest_list_and_refuses_the_next(gpus: int) -> None:
    largest = listandwatch.largest_per_gpu(gpus)
    fits = read_by_kubelet(gpus, largest)
    assert fits == {"devices": gpus * largest, "received": gpus * largest}
    over = read_by_kubelet(gpus, largest + 1)
    size = listandwatch.reply_bytes(gpus, largest + 1)
    assert over["received"] == 0
    assert f"received message larger than max ({size} vs. {listandwatch.KUBELET_RECEIVE_BOUND})" in str(over["error"])


def test_the_go_encoding_is_the_same_size() -> None:
    """The reply of an upstream report (8 GPUs of 12,196 MiB), sized by kubelet's gRPC as gpushare sizes it."""
    over = read_by_kubelet(8, 12196)
    assert "(5862768 vs. 4194304)" in str(over["error"]) and listandwatch.reply_bytes(8, 12196) == 5862768

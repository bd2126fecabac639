"""The size of the open-source device plugin's ListAndWatch reply in MiB units, against kubelet's bound (fact 11)."""

from __future__ import annotations

import pytest

from gpushare.domain import listandwatch


@pytest.mark.parametrize(
    ("gpus", "per_gpu", "reported"),
    [
        # kubelet's own error messages quoted in upstream reports: "received message larger than max (N vs. 4194304)"
        (8, 12196, 5_862_768),  # gpushare-scheduler-extender#16, 8 GPUs of 12,196 MiB (the plugin's log)
        (1, 81920, 4_986_010),  # gpushare-device-plugin#57, one A100 80GB PCIe
    ],
)
def test_the_reply_size_matches_what_kubelet_reported(gpus: int, per_gpu: int, reported: int) -> None:
    assert listandwatch.reply_bytes(gpus, per_gpu) == reported
    assert listandwatch.over_bound(gpus, per_gpu)


def test_one_device_is_its_id_and_health_in_protobuf() -> None:
    # ID "GPU-<36>-_-7": 44 bytes, 46 as a field; health "Healthy" 9 as a field; the entry's tag and length: 2
    assert listandwatch.device_bytes(1) == 2 + (2 + 44) + (2 + 7) == 57
    assert listandwatch.reply_bytes(3, 10) == 3 * 10 * 57
    assert listandwatch.reply_bytes(1, 11) == 10 * 57 + 58


@pytest.mark.parametrize("gpus", [1, 2, 3, 4, 8, 16])
def test_the_largest_list_is_the_last_one_under_the_bound(gpus: int) -> None:
    largest = listandwatch.largest_per_gpu(gpus)
    assert not listandwatch.over_bound(gpus, largest) and listandwatch.over_bound(gpus, largest + 1)
    assert 65_000 < gpus * largest < 72_000  # about 67 GiB a node, however many GPUs share it

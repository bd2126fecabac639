"""Python's cyclic collector is paused while a command or a placement run works, and left as it was found."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from gpushare import process
from gpushare.cli import main
from gpushare.kube.documents import Source
from gpushare.placement import Semantics, Simulation


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generations the collector collected while the test ran (it calls back only when it runs). A pause ends
    with at most one collection: the first allocation after it collects what the pause left in the young generation,
    once, where the collector on would have run at every 700 allocations."""
    seen: list[int] = []

    def record(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.enable()
    gc.callbacks.append(record)
    try:
        yield seen
    finally:
        gc.callbacks.remove(record)
        gc.enable()


def churn() -> list[list[int]]:
    """Enough container objects to trigger the youngest generation many times over (its threshold is 700)."""
    return [[i] for i in range(50_000)]


def fleet(pods: int, scheduler: str = "default-scheduler") -> tuple[list[Source], list[Source]]:
    nodes = [
        Source(
            {
                "kind": "Node",
                "metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}"}},
                "status": {"allocatable": {"aliyun.com/gpu-mem": 32, "aliyun.com/gpu-count": 2, "cpu": "64"}},
            },
            "nodes.yaml",
        )
        for i in range(20)
    ]
    new = [
        Source(
            {
                "kind": "Pod",
                "metadata": {"name": f"p{i}", "namespace": "default"},
                "spec": {
                    "schedulerName": scheduler,
                    "containers": [{"name": "c", "resources": {"limits": {"aliyun.com/gpu-mem": 1 + i % 4}}}],
                },
            },
            "pods.yaml",
        )
        for i in range(pods)
    ]
    return nodes, new


def test_the_collector_is_paused_and_restored(collections: list[int]) -> None:
    collections.clear()
    with process.paused():
        assert not gc.isenabled()
        with process.paused():
            kept = churn()
        assert not gc.isenabled()  # the inner pause leaves it to the outer
    assert gc.isenabled()
    assert len(collections) <= 1
    collections.clear()
    kept += churn()  # the same work with the collector on: it runs again and again
    assert len(collections) > 10


def test_what_a_pause_kept_goes_to_the_oldest_generation_unwalked(collections: list[int]) -> None:
    """The pause's objects are not walked by the young collections after it (that walk cost a third of a second
    after a planner answer at 100,000 pods); a cycle made in it is still freed by a full collection; what the
    caller froze stays frozen."""
    import weakref

    class Ring:
        other: Ring

    gc.collect()
    with process.paused():
        kept = churn()
        ring = Ring()
        ring.other = ring
        gone = weakref.ref(ring)
        del ring
    collections.clear()
    assert gc.get_freeze_count() == 0
    assert any(o is kept[0] for o in gc.get_objects(generation=2))  # not left young
    kept += churn()  # young collections now: none of them walks the pause's objects again
    assert collections and 2 not in collections
    assert gone() is not None  # a cycle waits for the full collection ...
    gc.collect()
    assert gone() is None  # ... and goes with it

    frozen = [[1]]
    gc.freeze()
    try:
        with process.paused():
            churn()
        assert gc.get_freeze_count() > 0  # the caller's frozen objects are left frozen
    finally:
        gc.unfreeze()
    del frozen


def test_the_collector_comes_back_after_an_error(collections: list[int]) -> None:
    with pytest.raises(ValueError), process.paused():
        raise ValueError
    assert gc.isenabled()
    gc.disable()
    with process.paused():
        pass
    assert not gc.isenabled()  # off before, off after


@pytest.mark.parametrize(
    "semantics", [Semantics("ack", "binpack", "GiB"), Semantics("upstream", gpu_memory_unit="GiB")]
)
def test_a_placement_run_does_not_collect(collections: list[int], semantics: Semantics) -> None:
    nodes, pods = fleet(3000, semantics.served_scheduler)
    simulation = Simulation.from_sources(nodes, [], pods, semantics)
    collections.clear()
    result = simulation.run()
    assert len(result.placements) + len(result.pending) == 3000
    assert len(collections) <= 1
    assert gc.isenabled()


def test_a_command_does_not_collect_and_restores(
    collections: list[int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nodes, pods = fleet(600)
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump_all([n.obj for n in nodes]))
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all([p.obj for p in pods]))
    collections.clear()
    code = main(["place", "--nodes", str(tmp_path / "nodes.yaml"), str(tmp_path / "pods.yaml"), "-o", "json"])
    assert code == 0, capsys.readouterr().err
    assert len(collections) <= 1
    assert gc.isenabled()
    assert main(["place", "--nodes", str(tmp_path / "missing.yaml"), str(tmp_path / "pods.yaml")]) == 2
    assert gc.isenabled()


def test_a_snapshot_stream_stays_flat_under_the_pause() -> None:
    """`gpushare snapshot` writes each item with json's indenting encoder, which leaves a ring of closures per call:
    with the collector paused (as the CLI runs), the sweep after each page keeps the heap from growing with the
    cluster (5,000 nodes and 150,000 pods took 535 MiB without it)."""
    from gpushare.kube.shapes import trim
    from gpushare.live.snapshot import _item

    pod = {"kind": "Pod", "metadata": {"name": "p", "namespace": "ml"}, "spec": {"nodeName": "n1", "containers": []}}

    def page() -> None:
        for _ in range(200):
            _item(trim(pod))

    with process.paused():
        process.sweep()
        before = len(gc.get_objects())
        for _ in range(5):
            page()
            process.sweep()
        swept = len(gc.get_objects())
        page()
        unswept = len(gc.get_objects())
    assert swept - before < 100
    assert unswept - swept > 1000  # what each sweep frees: the page's cycles

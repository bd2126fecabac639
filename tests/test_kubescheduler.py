"""kube-scheduler's facts as the placement model reads them: profiles per minor and API, the Policy's priorities,
the adaptive search size, and Go's arithmetic where Python's differs."""

from __future__ import annotations

import math
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from gpushare.domain import kubescheduler as ks
from gpushare.domain.minors import scoring_profile
from gpushare.domain.versions import MINORS, served_apis
from gpushare.errors import InputError

GO_PROGRAM = """package main

import (
\t"bufio"
\t"fmt"
\t"math"
\t"os"
)

func main() {
\tw := bufio.NewWriter(os.Stdout)
\tdefer w.Flush()
\tfor i := 2; i <= %d; i++ {
\t\tfmt.Fprintf(w, "%%x %%x\\n", math.Float64bits(math.Log(float64(i))), math.Float64bits(math.Round(float64(i)/4+0.5)))
\t}
}
"""


def _bits(x: float) -> int:
    return int(struct.unpack("<Q", struct.pack("<d", x))[0])


def test_go_log_and_round_are_gos_own(tmp_path: Path) -> None:
    """Spreading weighs counts by Go's math.Log and rounds with math.Round: compared with a Go program's output, bit
    for bit, on every integer up to 200,000 (Python's own log differs on about 1% of them)."""
    go = shutil.which("go")
    if go is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but Go is not installed")
        pytest.skip("needs Go")
    limit = 200_000
    (tmp_path / "go.mod").write_text("module golog\n\ngo 1.21\n")
    (tmp_path / "main.go").write_text(GO_PROGRAM % limit)
    env = {**os.environ, "GOFLAGS": "-mod=mod", "GOWORK": "off"}
    run = subprocess.run([go, "run", "."], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.split()
    differs = 0
    for i in range(2, limit + 1):
        log_bits, round_bits = lines[2 * (i - 2)], lines[2 * (i - 2) + 1]
        assert _bits(ks.go_log(float(i))) == int(log_bits, 16), f"log({i})"
        assert float(ks.go_round(i / 4 + 0.5)) == struct.unpack("<d", struct.pack("<Q", int(round_bits, 16)))[0]
        differs += _bits(math.log(i)) != int(log_bits, 16)
    assert differs > 1000  # the reason go_log exists: the C library's log is another function


def test_go_round_is_half_away_from_zero_even_near_one_half() -> None:
    assert ks.go_round(2.5) == 3 and ks.go_round(3.5) == 4  # Python's round() gives 2 and 4
    assert ks.go_round(0.49999999999999994) == 0  # floor(x + 0.5) would give 1


@pytest.mark.parametrize("minor", MINORS)
def test_every_served_api_has_a_profile(minor: int) -> None:
    for api in served_apis(minor):
        profile = scoring_profile(minor, api)
        assert profile.weights and all(weight > 0 for _, weight in profile.weights)
    assert scoring_profile(minor).api == served_apis(minor)[-1]


def test_weights_follow_the_api_not_the_minor() -> None:
    # 1.24 serves v1beta2 (the old weights) and v1beta3 (taints x3, affinity x2)
    old, new = scoring_profile(24, "v1beta2"), scoring_profile(24, "v1beta3")
    assert old.weight(ks.TAINT_TOLERATION) == 1 and new.weight(ks.TAINT_TOLERATION) == 3
    assert old.weight(ks.INTER_POD_AFFINITY) == 1 and new.weight(ks.INTER_POD_AFFINITY) == 2
    assert scoring_profile(22, "v1beta1").weight(ks.PREFER_AVOID_PODS) == 10000
    assert scoring_profile(22, "v1beta2").weight(ks.PREFER_AVOID_PODS) == 0


def test_a_policy_scores_by_its_priorities_as_kube_scheduler_maps_them() -> None:
    # both spreading priorities become PodTopologySpread; in name order EvenPodsSpreadPriority comes first and its
    # weight stays (appendToPluginSet keeps the first entry)
    weights = dict(ks.policy_weights([("SelectorSpreadPriority", 1), ("EvenPodsSpreadPriority", 2)]))
    assert weights == {ks.POD_TOPOLOGY_SPREAD: 2}
    weights = dict(ks.policy_weights([("SelectorSpreadPriority", 7), ("EvenPodsSpreadPriority", 2)]))
    assert weights == {ks.POD_TOPOLOGY_SPREAD: 2}
    # the Policy gpushare renders for 1.22 names no LeastRequestedPriority: no LeastAllocated score there
    profile = scoring_profile(22, "policy")
    assert profile.weight(ks.LEAST_ALLOCATED) == 0 and profile.weight(ks.BALANCED_ALLOCATION) == 1
    # 1.20's Policy names none: the legacy defaults, with LeastAllocated and NodePreferAvoidPods
    assert scoring_profile(20, "policy").weight(ks.LEAST_ALLOCATED) == 1


@pytest.mark.parametrize(
    ("nodes", "searched"),
    [(50, 50), (99, 99), (100, 100), (1000, 420), (2000, 680), (5000, 500), (20000, 1000)],
)
def test_feasible_nodes_searched(nodes: int, searched: int) -> None:
    # 50% minus 1% per 125 nodes, at least 5%, at least 100 nodes (schedule_one.go numFeasibleNodesToFind)
    assert ks.num_feasible_nodes_to_find(nodes) == searched
    assert ks.num_feasible_nodes_to_find(nodes, 100) == nodes


def test_an_unserved_api_is_refused() -> None:
    with pytest.raises(InputError, match=r"kube-scheduler 1\.28 serves: v1beta3, v1"):
        scoring_profile(28, "v1beta2")
    with pytest.raises(InputError, match=r"expected one of 1\.20-"):
        scoring_profile(19)

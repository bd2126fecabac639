"""cGPU, ACK's GPU isolation module: where it runs, what it needs, how it schedules (seed 004, ACK cGPU FAQ)."""

from __future__ import annotations

#: Pods one GPU holds on a `cgpu` node (seed 000: the isolation module still caps a GPU at 16).
MAX_PODS_PER_GPU = 16

#: Instance families cGPU supports.
FAMILIES: tuple[str, ...] = (
    "gn7i",
    "gn6i",
    "gn6v",
    "gn6e",
    "gn5i",
    "gn5",
    "ebmgn7i",
    "ebmgn6i",
    "ebmgn7e",
    "ebmgn6e",
    "ebmgn7ex",
    "sccgn7ex",
)
#: Operating systems cGPU supports (matched in a node's osImage, lower case).
OPERATING_SYSTEMS: tuple[str, ...] = ("centos", "ubuntu", "alibaba cloud linux")
MIN_DOCKER = "19.03.5"
MIN_DRIVER = "418.87.01"
#: The release that can deadlock the kernel, and the one ACK's FAQ asks releases up to it to upgrade to.
DEADLOCK = "1.5.7"
RECOMMENDED = "1.5.10"

#: cGPU release range -> (driver series allowed, newest release allowed within a series) (ACK cGPU FAQ).
DRIVERS: tuple[tuple[str, str, tuple[int, int], dict[int, str]], ...] = (
    ("1.5.3", "1.5.20", (460, 575), {}),
    ("1.0.5", "1.5.2", (0, 534), {470: "470.161.03", 510: "510.108.03", 515: "515.86.01", 525: "525.89.03"}),
    ("0.8.13", "1.0.3", (460, 470), {470: "470.161.03"}),
)

#: Scheduling policies written to /proc/cgpu_km/<gpu>/policy.
POLICIES: dict[int, str] = {
    0: "average",
    1: "preemptive",
    2: "weighted preemptive",
    3: "fixed",
    4: "weak",
    5: "native (memory isolation only)",
}

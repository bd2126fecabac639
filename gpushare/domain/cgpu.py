"""cGPU, ACK's GPU isolation module: where it runs, what it needs, how it schedules (seed 004, ACK cGPU FAQ)."""

from __future__ import annotations

from gpushare.domain.versionstr import numbers

#: Container environment variables of cGPU and the gpushare device plugin (ALIYUN_COM_GPU_MEM_CONTAINER, _DEV,
#: _SCHD_WEIGHT...) share this prefix: the only container env gpushare reads.
ENV_PREFIX = "ALIYUN_COM_GPU_"

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
#: What cGPU's isolation does and does not do, said wherever a user chooses it (NOTES, `gpushare rules`): seed 004.
ISOLATION_CAVEATS = (
    "Memory isolation makes a container that allocates beyond its share fail (CUDA out of memory) instead of "
    "hurting its neighbours; memory from cudaMallocManaged (UVM) is not isolated, use cudaMalloc. Compute "
    "policies are documented for Tesla P4, P100, T4, V100 and A10."
)
#: Why the instance families and operating systems of cGPU's prerequisites warn while the driver and Docker floors
#: of the same list refuse: the lists name what the document had tested (ACK revises its pages over time), while a
#: driver or Docker below its floor cannot run cGPU at all.
LISTS_GROW = (
    "A warning, not an error like the driver and Docker floors of the same prerequisite list: the families and "
    "operating systems are those the document names as tested, a list ACK revises over time, while a driver or "
    "Docker below its floor cannot run cGPU at all. Check ACK's current list for the node."
)
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

#: The floor the cGPU document sets with its driver floor: 1.5.7 can deadlock the kernel, 1.5.8 fixes it (seed 004).
MIN_RELEASE = "1.5.8"


def driver_range(release: str) -> str | None:
    """The NVIDIA drivers ACK's cGPU FAQ lists for a cGPU release, in words; None when the FAQ has no row for it."""
    for low, high, (first, last), caps in DRIVERS:
        if numbers(low) <= numbers(release) <= numbers(high):
            capped = "; ".join(f"{series} up to {newest}" for series, newest in caps.items())
            series = f"series {first}-{last}" if first else f"series up to {last}"
            return series + (f" ({capped})" if capped else "")
    return None


#: Scheduling policies written to /proc/cgpu_km/<gpu>/policy. The policy is per GPU (`echo 2 >
#: /proc/cgpu_km/0/policy`); the installer writes one default to every GPU of the node.
POLICIES: dict[int, str] = {
    0: "average",
    1: "preemptive",
    2: "weighted preemptive",
    3: "fixed",
    4: "weak",
    5: "native (memory isolation only)",
}
#: Policies that isolate compute. 0 (average) gives every container 1/max_inst of the GPU whatever its
#: gpu-core.percentage, so a fixed percentage is not what the container gets; 5 does not isolate compute at all.
COMPUTE_POLICIES: tuple[int, ...] = (1, 2, 3, 4)
AVERAGE, FIXED, NATIVE = 0, 3, 5
#: Policies under which the GPU is split evenly whatever a container's gpu-core.percentage (seed 004's scheduling
#: examples): 0 gives each container 1/max_inst; 1 (preemptive) and 4 (weak, like 1 with weaker isolation) share
#: it among the containers that are active, so a fixed percentage is not what a container gets.
EVEN: tuple[int, ...] = (0, 1, 4)

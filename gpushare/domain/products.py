"""What each product profile supports: the data the settings rules and the generator read.

`ack` is ACK Pro's shared GPU scheduling (ack-ai-installer, cGPU); `open-source` is the upstream
gpushare scheduler extender and device plugin on any cluster (facts sections 2, 4 and 5).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Final

ACK: Final = "ack"
OPEN_SOURCE: Final = "open-source"

#: ACK's Helm chart for shared GPU scheduling: the release a live read looks for, the chart gpushare renders.
INSTALLER_CHART: Final = "ack-ai-installer"

#: The words for a unit of aliyun.com/gpu-mem: ACK's two (its device plugin's spelling), the open-source plugin's
#: two (its --memory-unit). `1GiB` and `GiB` are one size under two products' names.
UNIT_1GIB: Final = "1GiB"
UNIT_128MIB: Final = "128MiB"
UNIT_GIB: Final = "GiB"
UNIT_MIB: Final = "MiB"

#: Where ACK's own device plugin image (the one 128MiB units need; not public, its tag varies by cluster) is read: an
#: ACK cluster with shared GPU scheduling runs it as a DaemonSet of ack-ai-installer in kube-system.
ACK_PLUGIN_LOOKUP: Final = (
    "kubectl -n kube-system get daemonsets -o wide (the IMAGES column of ack-ai-installer's device plugin)"
)

#: spec.schedulerName of a pod that names none, and of the scheduler ACK's managed and a kubeadm control plane run.
DEFAULT_SCHEDULER_NAME: Final = "default-scheduler"
#: spec.schedulerName of the secondary scheduler gpushare renders unless the settings name another.
SECONDARY_SCHEDULER_NAME: Final = "gpushare-scheduler"

MANAGED = "managed"
SECONDARY = "secondary"
CONTROL_PLANE = "control-plane"


def served_scheduler(mode: str, name: str | None = None) -> str:
    """The spec.schedulerName whose pods reach the extender: the secondary scheduler's own name, else the default
    scheduler (ACK's managed one, or the control plane's that calls the extender)."""
    return (name or SECONDARY_SCHEDULER_NAME) if mode == SECONDARY else DEFAULT_SCHEDULER_NAME


@dataclass(frozen=True)
class Profile:
    name: str
    memory_units: tuple[str, ...]
    isolation_modes: tuple[str, ...]
    scheduler_modes: tuple[str, ...]
    default_scheduler_mode: str
    compute_allocation: bool


PROFILES: dict[str, Profile] = {
    ACK: Profile(
        name=ACK,
        memory_units=(UNIT_1GIB, UNIT_128MIB),
        isolation_modes=("share", "cgpu", "core_mem"),
        scheduler_modes=(MANAGED, SECONDARY, CONTROL_PLANE),
        default_scheduler_mode=MANAGED,
        compute_allocation=True,
    ),
    OPEN_SOURCE: Profile(
        name=OPEN_SOURCE,
        memory_units=(UNIT_GIB, UNIT_MIB),
        isolation_modes=("share",),
        scheduler_modes=(SECONDARY, CONTROL_PLANE),
        default_scheduler_mode=SECONDARY,
        compute_allocation=False,
    ),
}
#: The product each dry-run semantics models (`--semantics`): ACK's rules, or the open-source extender's exactly.
SEMANTICS_PRODUCTS: dict[str, str] = {"ack": ACK, "upstream": OPEN_SOURCE}


def default_served(semantics: str | None) -> str:
    """The spec.schedulerName served when none is named: the product's default scheduler mode's (ACK's when the
    semantics is not said), as `place` serves it and `validate` checks it (GW214)."""
    product = PROFILES[SEMANTICS_PRODUCTS[semantics or "ack"]]
    return served_scheduler(product.default_scheduler_mode)


#: MiB in one unit of aliyun.com/gpu-mem, for every unit of every profile (seed 000; upstream-plugin).
MIB_PER_UNIT: dict[str, int] = {UNIT_1GIB: 1024, UNIT_128MIB: 128, UNIT_GIB: 1024, UNIT_MIB: 1}
assert set(MIB_PER_UNIT) == {u for p in PROFILES.values() for u in p.memory_units}

#: Compute allocation's minimums (seed 002): Kubernetes, the ack-ai-installer chart, cGPU.
MIN_KUBE_COMPUTE = "1.20"
MIN_CHART_COMPUTE = "1.2.0"
MIN_CGPU_COMPUTE = "1.0.5"
#: 128 MiB units need ACK Pro at least this version (seed 000).
MIN_ACK_SMALL_UNIT = "1.18.8"

#: Clusters created before these days need the scheduler restarted for 128MiB units (seed 000), upgraded for
#: compute allocation (seed 002). The kube-system namespace's creationTimestamp dates a cluster.
SMALL_UNIT_RESTART_BEFORE = "2021-10-20"
COMPUTE_UPGRADE_BEFORE = "2022-03-01"

#: Alibaba Cloud region IDs (public cloud, finance and government clouds), as the region lists of Alibaba Cloud's
#: documentation name them (ECS and ACK endpoints): a region's registry is registry-<region>.ack.aliyuncs.com, so a
#: misspelt one names a registry that does not exist. Alibaba Cloud adds regions: one not listed only warns (GS125).
REGIONS: tuple[str, ...] = (
    "cn-qingdao",
    "cn-beijing",
    "cn-zhangjiakou",
    "cn-huhehaote",
    "cn-wulanchabu",
    "cn-hangzhou",
    "cn-shanghai",
    "cn-nanjing",
    "cn-fuzhou",
    "cn-shenzhen",
    "cn-heyuan",
    "cn-guangzhou",
    "cn-chengdu",
    "cn-wuhan-lr",
    "cn-hongkong",
    "ap-northeast-1",
    "ap-northeast-2",
    "ap-southeast-1",
    "ap-southeast-2",
    "ap-southeast-3",
    "ap-southeast-5",
    "ap-southeast-6",
    "ap-southeast-7",
    "ap-south-1",
    "us-east-1",
    "us-west-1",
    "na-south-1",
    "eu-central-1",
    "eu-west-1",
    "me-east-1",
    "me-central-1",
    "cn-shanghai-finance-1",
    "cn-shenzhen-finance-1",
    "cn-beijing-finance-1",
    "cn-north-2-gov-1",
)

#: Regions where ACK offers compute-power allocation (seed 002).
COMPUTE_REGIONS: tuple[str, ...] = (
    "cn-beijing",
    "cn-shanghai",
    "cn-hangzhou",
    "cn-zhangjiakou",
    "cn-shenzhen",
    "cn-chengdu",
    "cn-heyuan",
    "cn-hongkong",
    "ap-southeast-5",
    "ap-southeast-1",
    "ap-southeast-7",
    "us-east-1",
    "us-west-1",
    "ap-northeast-1",
    "cn-shanghai-finance-1",
)

#: Minimum ACK kube-scheduler for compute allocation, by Kubernetes minor (seed 002). ACK offers even minors.
ACK_MIN_SCHEDULER_FOR_COMPUTE: dict[int, str] = {
    20: "1.20.4-ack-8.0",
    22: "1.22.15-ack-2.0",
    24: "1.24.3-ack-2.0",
    26: "v1.26.3-aliyun-4.1-a520c096",
    28: "1.28.1-aliyun-5.6-998282b9",
}


def close_regions(region: str) -> list[str]:
    """Known regions a misspelt one is likely to mean (`cn-hangzou`: cn-hangzhou). A numbered sibling of a known
    region (`ap-southeast-4`) is taken for a region newer than the list, not for a typo."""
    stem = re.sub(r"[0-9]+$", "", region)
    return [
        known
        for known in difflib.get_close_matches(region, REGIONS, n=2, cutoff=0.85)
        if re.sub(r"[0-9]+$", "", known) != stem
    ]

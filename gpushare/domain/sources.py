"""Where the product's facts come from, named so a user can find and read them.

Every rule cites one of these (with a section where the document has one); `gpushare rules` prints them.
"""

from __future__ import annotations

from typing import Final

# Alibaba Cloud ACK documentation (help center, Container Service for Kubernetes).
ACK_MEMORY_UNIT: Final = "ACK: Change the minimum GPU memory unit of shared GPU scheduling (128 MiB)"
ACK_OVERVIEW: Final = "ACK: Shared GPU scheduling overview"
ACK_COMPUTE: Final = "ACK: Allocate computing power by using shared GPU scheduling"
ACK_MULTI_GPU: Final = "ACK: Multi-GPU sharing"
ACK_GPU_LABELS: Final = "ACK: Labels used by ACK to control GPUs"
CGPU: Final = "ACK: Install and use the cGPU service"
CGPU_FAQ: Final = "ACK: cGPU FAQ"
REGIONS: Final = "Alibaba Cloud: Regions and zones (region IDs)"
# The open-source stack.
SELF_MANAGED_GUIDE: Final = "Guide: GPU sharing in Kubernetes with Alibaba Cloud's gpushare scheduler extender"
EXTENDER: Final = "github.com/AliyunContainerService/gpushare-scheduler-extender"
DEVICE_PLUGIN: Final = "github.com/AliyunContainerService/gpushare-device-plugin"
# Kubernetes.
SCHEDULER_CONFIG: Final = "Kubernetes: kube-scheduler configuration API versions (KEP-785, CHANGELOG-1.23)"
SCHEDULER_1_22: Final = "kube-scheduler 1.22: pkg/scheduler/factory.go (Policy file implies default-scheduler)"
KUBE_OBJECT_NAMES: Final = "Kubernetes: Object Names and IDs (a name is unique per kind and namespace)"
KUBE_SCALABILITY: Final = "Kubernetes: Considerations for large clusters (150,000 pods in all, 110 a node)"
KUBE_API_MIGRATION: Final = "Kubernetes: Deprecated API Migration Guide (each release's removed APIs)"
GPUSHARE: Final = "gpushare: schemas/installer-settings.schema.json"
GPUSHARE_VERSIONS: Final = "gpushare: gpushare/domain/versions.py (newest patch of each minor)"
GPUSHARE_FACTS: Final = "gpushare: cluster facts flags (gpushare validate --help)"
GPUSHARE_CHART: Final = (
    "gpushare: charts/ack-ai-installer (one device plugin DaemonSet per isolation mode, selecting the nodes of "
    "that ack.node.gpu.schedule label)"
)
GPUSHARE_CONTROL_PLANE: Final = "gpushare: control-plane/README.md (files written for one kubeadm version)"


def section(document: str, name: str) -> str:
    """A document and the section that says it."""
    return f"{document}, {name}"

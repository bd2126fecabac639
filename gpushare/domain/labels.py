"""Resource names, node labels and annotations of GPU sharing (facts sections 1, 4 and 5).

Every module that names one of these imports it from here.
"""

from __future__ import annotations

from typing import Literal, get_args

GPU_MEM = "aliyun.com/gpu-mem"
GPU_COUNT = "aliyun.com/gpu-count"
GPU_CORE = "aliyun.com/gpu-core.percentage"

SCHEDULE_LABEL = "ack.node.gpu.schedule"
PLACEMENT_LABEL = "ack.node.gpu.placement"
OPEN_SOURCE_NODE_LABEL = ("gpushare", "true")
#: The node label ACK puts on each node of a node pool (its ID): `gpushare watch`'s pools by default.
NODE_POOL_LABEL = "alibabacloud.com/nodepool-id"

#: Node modes of `ack.node.gpu.schedule`, and which of them take shared-GPU pods.
SHARED_MODES: tuple[str, ...] = ("share", "cgpu", "core_mem")
OTHER_MODES: tuple[str, ...] = ("default", "mps", "topology", "mig")
#: The mode of a node that reports GPU memory and has no label.
UNLABELLED_MODE = "share"
#: Modes whose nodes need the cGPU kernel module.
ISOLATED_MODES: tuple[str, ...] = ("cgpu", "core_mem")

#: `ack.node.gpu.placement`: binpack fills one GPU before the next (the default), spread takes the emptiest.
Placement = Literal["binpack", "spread"]
PLACEMENTS: tuple[Placement, ...] = get_args(Placement)

# Annotations the extender writes on bind and the device plugin reads (upstream-extender pkg/utils/const.go,
# upstream-plugin pkg/gpu/nvidia/const.go); ACK's scheduler reads them back from pods the old extender placed.
ANN_IDX = "ALIYUN_COM_GPU_MEM_IDX"
#: Every annotation of a placed GPU pod starts so (index, share, device total, assume time, assigned).
ANN_PREFIX = "ALIYUN_COM_GPU_MEM_"
ANN_POD_MEM = "ALIYUN_COM_GPU_MEM_POD"
ANN_DEV_MEM = "ALIYUN_COM_GPU_MEM_DEV"
ANN_ASSIGNED = "ALIYUN_COM_GPU_MEM_ASSIGNED"
ANN_ASSUME_TIME = "ALIYUN_COM_GPU_MEM_ASSUME_TIME"
#: ACK's scheduler framework plugin records a bound pod's GPUs as JSON, container index -> GPU index -> units
#: (`{"0":{"1":4}}`), with its own assigned flag and assume time; the device plugin's `kubectl inspect gpushare`
#: reads the allocation first too (upstream-plugin cmd/inspect/nodeinfo.go GetAllocation).
ACK_PREFIX = "scheduler.framework.gpushare."
ANN_ALLOCATION = "scheduler.framework.gpushare.allocation"
ANN_ACK_ASSIGNED = "scheduler.framework.gpushare.assigned"
ANN_ACK_ASSUME_TIME = "scheduler.framework.gpushare.assume-time"

UNHEALTHY_CONFIGMAP_PREFIX = "unhealthy-gpu-"

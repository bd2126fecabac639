"""The NVIDIA runtime as each container runtime's default (seed 003, step 1; NVIDIA Container Toolkit's nvidia-ctk).

The open-source device plugin hands GPUs to containers through `NVIDIA_VISIBLE_DEVICES`, which only the NVIDIA
runtime reads: pods asking for aliyun.com/gpu-mem carry no nvidia.com/gpu, so on a node whose default runtime is
plain runc they start without a GPU. The API shows which runtime a node runs
(`status.nodeInfo.containerRuntimeVersion`), never its default handler, so this is what to configure, per runtime.
"""

from __future__ import annotations

from typing import Final

#: What makes the NVIDIA runtime the default, by the scheme of containerRuntimeVersion ("docker://20.10.7").
DEFAULT_RUNTIME_SETUP: Final[dict[str, str]] = {
    "docker": '"default-runtime": "nvidia" in /etc/docker/daemon.json '
    "(nvidia-ctk runtime configure --runtime=docker --set-as-default), then restart docker",
    "containerd": 'default_runtime_name = "nvidia" in /etc/containerd/config.toml '
    "(nvidia-ctk runtime configure --runtime=containerd --set-as-default), then restart containerd",
    "cri-o": 'default_runtime = "nvidia" in a /etc/crio/crio.conf.d/ drop-in '
    "(nvidia-ctk runtime configure --runtime=crio --set-as-default), then restart crio",
}
UNKNOWN_RUNTIME_SETUP: Final = (
    "the NVIDIA container runtime as the node's default runtime (nvidia-ctk runtime configure --set-as-default)"
)


def runtime_name(version: str) -> str:
    """`containerd://1.6.8` -> containerd; a node that reports none -> ''."""
    return version.split("://", 1)[0].strip().lower() if "://" in version else ""


def default_runtime_setup(version: str) -> str:
    return DEFAULT_RUNTIME_SETUP.get(runtime_name(version), UNKNOWN_RUNTIME_SETUP)

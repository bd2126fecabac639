"""The GPU device plugins a node may run, known by what their pods run and say: two on one node advertise the same
GPUs twice (the most reported install fault of GPU sharing: a pod given a whole GPU that shared pods use, or the
last plugin to register taking the resource over).

Sources: gpushare's chart (its labels: `app.kubernetes.io/part-of: gpushare`, component `device-plugin`);
gpushare-device-plugin 45fb8b8 device-plugin-ds.yaml (DaemonSet `gpushare-device-plugin-ds`, image
`acs/k8s-gpushare-plugin`), which ACK's ack-ai-installer ships too (`gpushare-device-plugin-ds`,
`gpushare-core-device-plugin-ds`, `gpushare-mps-device-plugin-ds`; help page "Manage the shared GPU scheduling
component"); NVIDIA/k8s-device-plugin 1b826ac (image `nvcr.io/nvidia/k8s-device-plugin`, formerly
`nvidia/k8s-device-plugin`; DaemonSet `nvidia-device-plugin-daemonset`), NVIDIA/gpu-operator a22dbf6 (label `app:
nvidia-device-plugin-daemonset`), ACK's own NVIDIA plugin (static pod `nvidia-device-plugin-<node>`, label
`component: nvidia-device-plugin`; from 1.32 the DaemonSet `ack-nvidia-device-plugin`); Project-HAMi/HAMi 4707fb0
(image `projecthami/hami`, label `app.kubernetes.io/component: hami-device-plugin`; before 2024 `4pdosc/k8s-vdevice`,
`4pd-device-plugin`). The gpushare installer's `device-plugin-evict-ds` and `device-plugin-recover-ds` (images
`nvidia-device-plugin-evict`, `-recover`) move NVIDIA's static pod away and back: they advertise nothing.
"""

from __future__ import annotations

import re
from typing import Final

#: This chart's device plugin: the labels gpushare renders on its pods.
CHART_LABELS: Final = {"app.kubernetes.io/part-of": "gpushare", "app.kubernetes.io/component": "device-plugin"}
CHART: Final = "gpushare's chart"
#: The other plugins, by a pattern over a pod's images, owner and label values (first match wins).
FAMILIES: Final = (
    ("gpushare device plugin (ACK's ack-ai-installer, or the open-source manifests)",
     re.compile(r"k8s-gpushare-plugin|gpushare-device-plugin|gpushare-(core|mps)-device-plugin")),
    ("NVIDIA device plugin", re.compile(r"k8s-device-plugin|nvidia-device-plugin")),
    ("HAMi device plugin", re.compile(r"projecthami/hami|hami-device-plugin|4pdosc/k8s-vdevice|4pd-device-plugin")),
)  # fmt: skip
#: Pods that look like a plugin's and advertise nothing: the gpushare installer's movers of NVIDIA's static pod.
NOT_PLUGINS: Final = re.compile(r"device-plugin-(evict|recover)\b")


def family(images: str, owner: str, labels: dict[str, str]) -> str | None:
    """Which device plugin a pod runs (None: none): this chart's by its labels, the others by images, owner name
    and label values."""
    if all(labels.get(k) == v for k, v in CHART_LABELS.items()):
        return CHART
    said = " ".join([images, owner, *labels.values()])
    if NOT_PLUGINS.search(said):
        return None
    return next((name for name, pattern in FAMILIES if pattern.search(said)), None)


def fix(families: set[str]) -> str:
    """What to do about the plugins found together on one node."""
    if CHART in families and FAMILIES[0][0] in families:
        return (
            "one of them: this chart takes the place of ACK's ack-ai-installer (or the open-source manifests); "
            "uninstall that component, or this release"
        )
    if len(families) == 1:
        return "one pod: two releases or DaemonSets of one plugin select the node; keep one"
    return (
        "one device plugin per node: keep NVIDIA's or HAMi's off GPU-sharing nodes (a node selector or affinity on "
        "its DaemonSet; on ACK, ack.node.gpu.schedule=default nodes run NVIDIA's)"
    )

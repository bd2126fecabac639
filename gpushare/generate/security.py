"""Where a workload must hold a privilege a hardening scan flags, and why: one table, written onto the
objects as `checkov.io/skipN` annotations so the reason travels with the manifest and scanners honour it."""

from __future__ import annotations

_ROOT = "writes the kubelet's root-owned device-plugin socket directory (/var/lib/kubelet/device-plugins)"
_API = "talks to the Kubernetes API (RBAC-limited), so it needs its ServiceAccount token"
_NO_HTTP = "serves no HTTP endpoint to probe; the kubelet restarts it when the process exits"
_KMOD = "loads the cGPU kernel module and writes /proc/cgpu_km: this needs a privileged container"

EXCEPTIONS: dict[str, dict[str, str]] = {
    "device-plugin": {
        "CKV_K8S_23": _ROOT,
        "CKV_K8S_40": _ROOT,
        "CKV_K8S_38": _API,
        "CKV_K8S_8": _NO_HTTP,
        "CKV_K8S_9": _NO_HTTP,
    },
    "scheduler": {
        "CKV_K8S_38": _API,
        "CKV_K8S_115": "kubelet probes reach the pod IP, so it binds all pod addresses; a NetworkPolicy admits "
        "no ingress",
        "CKV_K8S_114": "profiling is off in the configuration file (enableProfiling: false); checkov reads flags only",
    },
    "cgpu-installer": {
        **{
            check: _KMOD
            for check in (
                "CKV_K8S_16",
                "CKV_K8S_20",
                "CKV_K8S_22",
                "CKV_K8S_23",
                "CKV_K8S_28",
                "CKV_K8S_37",
                "CKV_K8S_40",
            )
        },
        "CKV_K8S_8": _NO_HTTP,
        "CKV_K8S_9": _NO_HTTP,
    },
}


def skip_annotations(component: str) -> dict[str, str]:
    return {
        f"checkov.io/skip{i}": f"{check}={reason}"
        for i, (check, reason) in enumerate(sorted(EXCEPTIONS.get(component, {}).items()), start=1)
    }

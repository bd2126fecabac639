"""Kubernetes versions and the kube-scheduler configuration APIs each one serves.

One table, imported by the generator, the policy rules and the tests, so that a new minor or a
removed API is a one-line change here (facts section 6: kubernetes/kube-scheduler config/, KEP-785,
CHANGELOG-1.23).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpushare.errors import InputError

#: Newest patch release of each supported minor: the kube-scheduler image tag used when only a
#: minor is known (a chart given only a minor matches the cluster's own version at install time).
LATEST_PATCH: dict[int, int] = {
    20: 15,
    21: 14,
    22: 17,
    23: 17,
    24: 17,
    25: 16,
    26: 15,
    27: 16,
    28: 15,
    29: 6,
    30: 14,
    31: 14,
    32: 13,
    33: 13,
    34: 4,
    35: 4,
    36: 3,
}
MINORS: tuple[int, ...] = tuple(sorted(LATEST_PATCH))
#: Upstream's kube-scheduler image: a chart given only a minor pulls LATEST_PATCH's tag of it, a universal chart
#: the cluster's own version at install time.
KUBE_SCHEDULER_IMAGE = "registry.k8s.io/kube-scheduler"
#: The supported minors as messages and help name them.
SUPPORTED = f"1.{MINORS[0]}-1.{MINORS[-1]}"

POLICY = "policy"
#: Every scheduler configuration API the generator knows, oldest first.
CONFIG_APIS: tuple[str, ...] = (POLICY, "v1beta1", "v1beta2", "v1beta3", "v1")

#: API -> minors that serve it (inclusive range).
_SERVED: dict[str, tuple[int, int]] = {
    POLICY: (20, 22),
    "v1beta1": (20, 22),
    "v1beta2": (22, 27),
    "v1beta3": (23, 28),
    "v1": (25, 36),
}
#: API -> minors from which it is deprecated (a warning, not an error).
_DEPRECATED_FROM: dict[str, int] = {POLICY: 20, "v1beta1": 22, "v1beta2": 25, "v1beta3": 28}

#: Workload APIs a minor does not serve, by the Deprecated API Migration Guide: (apiVersion, kind) -> (the first
#: minor serving it, the first minor without it or None, the API to write instead). The controllers' beta APIs went
#: in 1.16, before any supported minor; CronJob's batch/v1beta1 in 1.25, and its batch/v1 arrived in 1.21.
WORKLOAD_APIS: dict[tuple[str, str], tuple[int, int | None, str]] = {
    ("batch/v1", "CronJob"): (21, None, "batch/v1beta1"),
    ("batch/v1beta1", "CronJob"): (8, 25, "batch/v1"),
    **{("extensions/v1beta1", kind): (2, 16, "apps/v1") for kind in ("Deployment", "DaemonSet", "ReplicaSet")},
    **{("apps/v1beta1", kind): (9, 16, "apps/v1") for kind in ("Deployment", "StatefulSet")},
    **{("apps/v1beta2", kind): (9, 16, "apps/v1") for kind in ("Deployment", "DaemonSet", "ReplicaSet", "StatefulSet")},
}


def unserved_workload_api(api_version: str, kind: str, minor: int) -> str | None:
    """What to write instead when the minor does not serve this workload API; None when it does (or is not known
    to have changed)."""
    found = WORKLOAD_APIS.get((api_version, kind))
    if found is None:
        return None
    since, removed, instead = found
    if minor < since:
        return f"{instead} (1.{minor} does not serve {api_version} {kind} yet; it arrives in 1.{since})"
    if removed is not None and minor >= removed:
        return f"{instead} ({api_version} {kind} was removed in 1.{removed})"
    return None


CONFIG_GROUP = "kubescheduler.config.k8s.io"
#: The last minor whose kube-scheduler takes --scheduler-name with a Policy file; from 1.22 a Policy
#: scheduler is always `default-scheduler` (pkg/scheduler/factory.go), so it cannot run beside the default one.
POLICY_SCHEDULER_NAME_UNTIL = 21

#: `1.24`, `v1.24.7`, and the versions vendors report: `v1.24.7-aliyun.1` (ACK), `v1.28.3-gke.100`, `+build`.
_VERSION = re.compile(r"^v?1\.(\d{1,4})(?:\.(\d{1,6}))?(?:[-+][0-9A-Za-z][0-9A-Za-z.+-]*)?$")


@dataclass(frozen=True, order=True)
class KubeVersion:
    """A Kubernetes version the product supports; `patch` is None when only the minor was given."""

    minor: int
    patch: int | None = None

    @property
    def text(self) -> str:
        return f"1.{self.minor}" if self.patch is None else f"v1.{self.minor}.{self.patch}"

    @property
    def full(self) -> str:
        """The release the kube-scheduler image tag names: the given patch, else the newest one."""
        patch = LATEST_PATCH[self.minor] if self.patch is None else self.patch
        return f"v1.{self.minor}.{patch}"


def parse_kube_version(text: str, field: str = "kubernetesVersion") -> KubeVersion:
    """Accept `1.22`, `v1.22`, `1.22.3`, `v1.22.3` or a vendor's `v1.22.3-aliyun.1` for a supported minor (the
    suffix names the vendor's build of that upstream release); anything else is an InputError."""
    match = _VERSION.match(str(text).strip())
    allowed = f"a minor 1.{MINORS[0]}-1.{MINORS[-1]} or a full v1.X.Y in that range"
    if not match:
        raise InputError(field, text, allowed)
    minor = int(match.group(1))
    if minor not in LATEST_PATCH:
        raise InputError(field, text, allowed)
    return KubeVersion(minor, None if match.group(2) is None else int(match.group(2)))


def newer_than_known(version: KubeVersion) -> bool:
    """A patch past the newest gpushare knows: accepted (releases go on), but its images may not exist yet."""
    return version.patch is not None and version.patch > LATEST_PATCH[version.minor]


def served_apis(minor: int) -> tuple[str, ...]:
    """Configuration APIs this minor's kube-scheduler accepts, oldest first."""
    return tuple(api for api in CONFIG_APIS if _SERVED[api][0] <= minor <= _SERVED[api][1])


def default_api(minor: int) -> str:
    """The newest KubeSchedulerConfiguration API the minor serves (never the legacy Policy)."""
    return served_apis(minor)[-1]


def is_deprecated(api: str, minor: int) -> bool:
    return minor >= _DEPRECATED_FROM.get(api, 10**6)


def choose_api(requested: str, minor: int, field: str = "scheduler.configApi") -> str:
    """Resolve `auto` to the default API and refuse an API the minor does not serve."""
    if requested == "auto":
        return default_api(minor)
    served = served_apis(minor)
    if requested not in served:
        low, high = _SERVED[requested]
        raise InputError(
            field,
            requested,
            f"an API Kubernetes 1.{minor} serves: {', '.join(served)} ({requested} is served by 1.{low}-1.{high} only)",
        )
    return requested


def kube_version_constraint(version: KubeVersion | None) -> str:
    """Chart.yaml `kubeVersion`: the rendered minor, or every supported minor for a universal chart."""
    low, high = (MINORS[0], MINORS[-1]) if version is None else (version.minor, version.minor)
    return f">=1.{low}.0-0 <1.{high + 1}.0-0"

"""ResourceQuota admission: the API server refuses to create a pod that would take its namespace past a quota, so
such a pod never reaches the scheduler (plugin/pkg/admission/resourcequota, the pod evaluator of
pkg/quota/v1/evaluator/core/pods.go).

Pods are created in input order; each one admitted adds its requests to its namespace's use whether it is then
placed or stays pending, as a pending pod holds its quota. A quota's use starts from its `status.used` (what the quota
controller last wrote), or, without one, from the running pods of its namespace given with `--existing`.

Modelled: `pods` and `count/pods`, `cpu`/`requests.cpu`, `memory`/`requests.memory` and `requests.<resource>` for
every other resource (aliyun.com/gpu-mem included), on quotas without scopes. `limits.*` and scoped quotas are not:
the run says so and does not check them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from gpushare.domain import labels
from gpushare.domain.quantity import QuantityError, milli, whole
from gpushare.errors import shown
from gpushare.kube.documents import Source
from gpushare.kube.fields import mapping
from gpushare.placement.model import Pod

KIND = "ResourceQuota"
#: A quota with scopes counts only some pods (BestEffort, PriorityClass...): not modelled, so not checked at all.
SCOPES = "scopes (the quota as a whole)"
#: Quota names of a pod's requests (besides `requests.<name>`), and the pod count.
_ALIASES = {"cpu": "requests.cpu", "memory": "requests.memory", "count/pods": "pods"}


@dataclass
class Quota:
    namespace: str
    name: str
    hard: dict[str, int]  # resource (as the pod's requests name it, or `pods`) -> amount in the model's units
    used: dict[str, int] | None  # status.used, if the controller wrote one
    skipped: list[str] = field(default_factory=list)  # what it constrains that is not modelled

    def exceeded(self, asked: dict[str, int], using: dict[str, int]) -> list[str]:
        return sorted(r for r, limit in self.hard.items() if asked.get(r, 0) and using.get(r, 0) + asked[r] > limit)


def _resource(name: str) -> str | None:
    """A quota's resource name as the model's requests name it; None: not modelled."""
    name = _ALIASES.get(name, name)
    if name == "pods":
        return name
    if name.startswith("requests."):
        return name[len("requests.") :]
    return None


def _amount(resource: str, value: object, ratio: tuple[int, int]) -> int:
    if resource == "cpu":
        return milli(value)
    amount = whole(value)
    if resource == labels.GPU_MEM and ratio[0] != ratio[1]:
        amount = amount * ratio[0] // ratio[1]  # a limit in the files' unit, in the modelled one: never raised
    return amount


def read_quotas(sources: Iterable[Source], ratio: tuple[int, int]) -> list[Quota]:
    """The ResourceQuota objects among the documents; what one constrains that the model does not hold, or an
    amount that does not parse, is noted on it and left unchecked."""
    quotas = []
    for src in sources:
        if src.kind != KIND:
            continue
        meta, spec = mapping(src.obj.get("metadata")), mapping(src.obj.get("spec"))
        quota = Quota(str(meta.get("namespace") or "default"), str(meta.get("name", "")), {}, None)
        if spec.get("scopes") or spec.get("scopeSelector"):
            quota.skipped.append(SCOPES)
        quota.hard = _amounts(mapping(spec.get("hard")), ratio, quota.skipped)
        used = mapping(mapping(src.obj.get("status")).get("used"))
        if used:
            quota.used = _amounts(used, ratio, None)
        quotas.append(quota)
    return quotas


def _amounts(table: dict[str, object], ratio: tuple[int, int], skipped: list[str] | None) -> dict[str, int]:
    found = {}
    for name, value in table.items():
        resource = _resource(str(name))
        if resource is None:
            if skipped is not None:
                skipped.append(f"{name} (not modelled)")
            continue
        try:
            found[resource] = _amount(resource, value, ratio)
        except QuantityError:
            if skipped is not None:
                skipped.append(f"{name} {shown(value)} (not a quantity)")
    return found


def requests_of(pod: Pod) -> dict[str, int]:
    """What a pod's creation adds to its namespace's quota use: its node-level requests and one pod."""
    asked = {"cpu": pod.cpu, "memory": pod.memory, labels.GPU_MEM: pod.node_gpu_mem, labels.GPU_CORE: pod.node_core}
    asked.update(pod.other)
    asked["pods"] = 1
    return asked


@dataclass
class Refusal:
    pod: Pod
    message: str


def admit(quotas: list[Quota], existing: Sequence[Pod], new: Iterable[Pod]) -> tuple[list[Refusal], list[str]]:
    """The new pods the API server refuses, in order, with its message; and notes on what was not checked."""
    notes = [f"ResourceQuota {q.namespace}/{q.name}: not checked: {', '.join(q.skipped)}" for q in quotas if q.skipped]
    # each quota checked, with its use: the controller's status, else what it would count (the namespace's pods)
    checked = [
        (q, dict(q.used) if q.used is not None else _use(q.namespace, existing))
        for q in quotas
        if SCOPES not in q.skipped and q.hard
    ]
    refused = []
    for pod in new:
        asked = requests_of(pod)
        mine = [(q, use) for q, use in checked if q.namespace == pod.namespace]
        over = next(((q, use, names) for q, use in mine if (names := q.exceeded(asked, use))), None)
        if over is not None:
            quota, use, names = over

            def amounts(of: dict[str, int], names: list[str] = names) -> str:
                return ",".join(f"{_quota_name(r)}={_shown(r, of.get(r, 0))}" for r in names)

            message = (
                f'pods "{pod.name}" is forbidden: exceeded quota: {quota.name}, requested: {amounts(asked)}, '
                f"used: {amounts(use)}, limited: {amounts(quota.hard)}"
            )
            refused.append(Refusal(pod, message))
            continue
        for _, use in mine:
            for resource, amount in asked.items():
                use[resource] = use.get(resource, 0) + amount
    return refused, notes


def _use(namespace: str, existing: Sequence[Pod]) -> dict[str, int]:
    total: dict[str, int] = {}
    for pod in existing:
        if pod.namespace == namespace and not pod.invalid:
            for resource, amount in requests_of(pod).items():
                total[resource] = total.get(resource, 0) + amount
    return total


def _quota_name(resource: str) -> str:
    return resource if resource == "pods" else f"requests.{resource}"


def _shown(resource: str, amount: int) -> str:
    """An amount as the API server's message writes it (cpu in millicores where not whole)."""
    if resource == "cpu":
        return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
    return str(amount)

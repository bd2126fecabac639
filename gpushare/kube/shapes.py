"""What gpushare reads of a Pod: the one list of the fields every command uses, so a fleet's pods can be read
without the rest (managedFields, status, env sources, probes, volumes are most of what kubectl writes).

The shapes are TypedDicts: the fast reader hands them to msgspec, which decodes only these fields, and `trim`
cuts a document read any other way down to the same fields, so both readers give the same dict. A value of
another type than its shape expects (a container that is not a mapping) is kept as written: the workload
reader reports it (GW201), as it would without trimming. A field a rule starts to read is added here.
"""

from __future__ import annotations

import functools
import typing
from typing import Any, TypedDict

from gpushare.domain import cgpu


class EnvVar(TypedDict, total=False):
    name: Any
    value: Any


class Container(TypedDict, total=False):
    name: Any
    image: Any
    resources: Any
    env: list[EnvVar]
    ports: Any  # host ports (NodePorts)
    restartPolicy: Any  # an init container with Always is a sidecar


class PodSpec(TypedDict, total=False):
    containers: list[Container]
    initContainers: list[Container]
    nodeName: Any
    nodeSelector: Any
    affinity: Any
    tolerations: Any
    topologySpreadConstraints: Any
    overhead: Any
    schedulerName: Any
    priority: Any  # what the Priority admission plugin set, and the class it set it from
    priorityClassName: Any
    preemptionPolicy: Any


class ObjectMeta(TypedDict, total=False):
    """What identifies a pod and what rules and scheduling read of it (not its uid, resourceVersion or
    managedFields)."""

    name: Any
    namespace: Any
    labels: Any
    annotations: Any
    ownerReferences: Any
    creationTimestamp: Any  # a pod that exists waits in the scheduling queue with the others; doctor's install time


class PodStatus(TypedDict, total=False):
    phase: Any  # Succeeded and Failed pods hold no resources
    startTime: Any  # preemption spares the earlier started of two victims of one priority


class Pod(TypedDict, total=False):
    apiVersion: Any
    kind: Any
    metadata: ObjectMeta
    spec: PodSpec
    status: PodStatus


#: The shape of each kind that has one; other kinds are kept whole but for metadata.managedFields.
SHAPES: dict[str, type] = {"Pod": Pod}


@functools.cache
def _fields(shape: type) -> dict[str, Any]:
    return typing.get_type_hints(shape)


def _cut(value: Any, hint: Any) -> Any:
    if isinstance(hint, type) and typing.is_typeddict(hint):
        return _cut_mapping(value, hint) if isinstance(value, dict) else value
    if typing.get_origin(hint) is list:
        (item,) = typing.get_args(hint)
        return [_cut(v, item) for v in value] if isinstance(value, list) else value
    return value


def _cut_mapping(value: dict[str, Any], shape: type) -> dict[str, Any]:
    fields = _fields(shape)
    return {k: _cut(v, fields[k]) for k, v in value.items() if k in fields}


def cgpu_env_only(pod: dict[str, Any]) -> dict[str, Any]:
    """A shaped pod with only cGPU's variables in each container's env (most of a pod's env, and read by no rule):
    what the shape cannot say, as it goes by the variable's name."""
    spec = pod.get("spec")
    for kind in ("containers", "initContainers"):
        containers = spec.get(kind) if isinstance(spec, dict) else None
        for container in containers if isinstance(containers, list) else ():
            env = container.get("env") if isinstance(container, dict) else None
            if isinstance(env, list):
                container["env"] = [
                    e for e in env if not isinstance(e, dict) or str(e.get("name", "")).startswith(cgpu.ENV_PREFIX)
                ]
    return pod


def trim(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as gpushare reads it: a shaped kind cut to its shape, any other without managedFields."""
    kind = obj.get("kind")
    shape = SHAPES.get(kind) if isinstance(kind, str) else None
    if shape is not None:
        return cgpu_env_only(_cut_mapping(obj, shape))
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        obj = {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    return obj

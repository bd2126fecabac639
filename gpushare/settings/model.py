"""The installer settings document: the validated model every generator input goes through.

Flags, a `--config` YAML document and Python callers all end here. Structure and types are checked
by pydantic (unknown keys are refused, so a typo is never silently ignored); the product's
cross-field rules (unit per profile, compute allocation prerequisites...) live in `gpushare.policy.rules`.
"""

from __future__ import annotations

import copy
import functools
import re
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from gpushare.domain import cgpu, kinds, labels, products
from gpushare.domain.versions import (
    CONFIG_APIS,
    KUBE_SCHEDULER_IMAGE,
    MINORS,
    SUPPORTED,
    KubeVersion,
    parse_kube_version,
)
from gpushare.errors import InputError

API_VERSION: Final = kinds.API_VERSION
KIND: Final = kinds.INSTALLER_SETTINGS
IsolationMode = Literal["share", "cgpu", "core_mem"]


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, alias_generator=to_camel, validate_by_name=True, validate_by_alias=True
    )


#: The repository part of an image reference (distribution/reference regexp.go): an optional registry host with
#: port, then lowercase path components separated by `.`, `_`, `__` or dashes.
_HOST = r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*(?::[0-9]+)?"
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
REPOSITORY_PATTERN = rf"^(?:{_HOST}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*$"


class Image(_Model):
    """A container image; a digest, when set, pins it and wins over the tag."""

    repository: str = Field(
        description="Image repository, without tag: [registry[:port]/]path, as the OCI distribution reference "
        "grammar defines it (lowercase path components).",
        min_length=1,
        max_length=255,
        pattern=REPOSITORY_PATTERN,
    )
    tag: str = Field(
        "",
        description="Image tag (default: the release gpushare pins for the profile); empty only where a digest is set.",
        pattern=r"^[\w][\w.-]{0,127}$|^$",
    )
    digest: str | None = Field(
        None,
        description="Optional digest (sha256:...); when set the image is pulled by digest.",
        pattern=r"^sha256:[0-9a-f]{64}$",
    )
    pull_policy: Literal["Always", "IfNotPresent", "Never"] = Field("IfNotPresent", description="imagePullPolicy.")


#: A Kubernetes quantity as the API's OpenAPI defines it (apimachinery resource.Quantity): `100m`, `256Mi`, `1e3`.
QUANTITY_PATTERN = r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
Quantity = Annotated[str, Field(pattern=QUANTITY_PATTERN)] | Annotated[int, Field(ge=0)]


class Resources(_Model):
    """Container resource requests and limits (Kubernetes quantities)."""

    requests: dict[str, Quantity] = Field(default_factory=dict, description="Resource requests, e.g. {cpu: 100m}.")
    limits: dict[str, Quantity] = Field(default_factory=dict, description="Resource limits, e.g. {memory: 256Mi}.")


class Toleration(_Model):
    """A pod toleration (the Kubernetes core/v1 Toleration fields)."""

    key: str | None = Field(None, description="Taint key; empty with operator Exists tolerates every taint.")
    operator: Literal["Exists", "Equal"] = Field("Equal", description="Exists or Equal.")
    value: str | None = Field(None, description="Taint value, with operator Equal.")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = Field(None, description="Taint effect.")
    toleration_seconds: int | None = Field(None, description="For NoExecute: seconds the pod stays bound.")


#: A Kubernetes object name (DNS subdomain), or empty.
_OBJECT_NAME = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$"


class LocalObjectReference(_Model):
    """An object of the release's namespace, by name: an imagePullSecrets entry."""

    name: str = Field(description="Secret name.", min_length=1, max_length=253, pattern=_OBJECT_NAME)


class ContainerSettings(_Model):
    """Settings of one container."""

    image: Image = Field(description="Container image.")
    resources: Resources = Field(default_factory=Resources, description="Container resources.")


class Component(ContainerSettings):
    """Settings of a workload with pods of its own: a container plus where its pods may run."""

    tolerations: list[Toleration] = Field(default_factory=list, description="Extra pod tolerations.")
    node_selector: dict[str, str] = Field(default_factory=dict, description="Extra pod node selector labels.")
    priority_class_name: str = Field(
        "system-node-critical",
        description="PriorityClass of the pods (empty: none). A node's GPU sharing stops without them, so by "
        "default they are node-critical, as ACK runs its GPU components.",
        pattern=_OBJECT_NAME,
        max_length=253,
    )


class SchedulerImage(Image):
    """kube-scheduler's image, whose tag may follow the cluster: one scheduler matches one Kubernetes release."""

    tag: str = Field(
        "",
        description="Image tag. Empty: the cluster's own Kubernetes version (v1.X.Y, as the kube-scheduler "
        "release of the cluster).",
        pattern=r"^[\w][\w.-]{0,127}$|^$",
    )


class SchedulerSettings(Component):
    """How pods reach the extender: ACK's managed scheduler, a second scheduler, or the control plane's."""

    image: SchedulerImage = Field(description="Container image.")
    priority_class_name: str = Field(
        "system-cluster-critical",
        description="PriorityClass of the scheduler's pods (empty: none): cluster-critical, as kube-scheduler's.",
        pattern=_OBJECT_NAME,
        max_length=253,
    )

    mode: Literal["managed", "secondary", "control-plane"] = Field(
        description="managed (ACK Pro: no scheduler objects), secondary (a kube-scheduler Deployment with its own "
        "schedulerName and the extender as a sidecar on 127.0.0.1) or control-plane (files to change a kubeadm "
        "cluster's kube-scheduler static pod). Default: managed for ack, secondary for open-source."
    )
    config_api: str = Field(
        "auto",
        description="kube-scheduler configuration API: auto (the newest the Kubernetes minor serves), "
        "policy (legacy Policy JSON, 1.20-1.22), v1beta1, v1beta2, v1beta3 or v1.",
        json_schema_extra={"enum": ["auto", *CONFIG_APIS]},
    )
    name: str = Field(
        products.SECONDARY_SCHEDULER_NAME,
        description="schedulerName of the secondary scheduler; pods opt in with spec.schedulerName.",
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        max_length=63,
    )
    replicas: int = Field(1, ge=1, le=5, description="Secondary scheduler replicas (leader election keeps one active).")

    @field_validator("config_api")
    @classmethod
    def _known_api(cls, value: str) -> str:
        if value not in ("auto", *CONFIG_APIS):
            raise ValueError(f"one of auto, {', '.join(CONFIG_APIS)}")
        return value


class ExtenderSettings(ContainerSettings):
    """The gpushare scheduler extender (upstream-extender HTTP API), run beside the kube-scheduler it serves."""

    port: int = Field(
        12345,
        ge=1024,
        le=65535,
        description="Port the extender listens on (env PORT); the scheduler reaches it on 127.0.0.1.",
    )
    log_level: Literal["debug", "info", "warn", "error"] = Field("info", description="Extender LOG_LEVEL.")
    http_timeout_seconds: int = Field(30, ge=1, le=600, description="Scheduler-side timeout of one extender call.")


#: The device plugin's repository left empty: the image is given at install time (a chart's
#: `--set devicePlugin.image.repository=...`), as 128MiB units and compute allocation on ACK need ACK's own plugin,
#: whose image gpushare does not know.
AT_INSTALL = ""
_PLUGIN_REPOSITORY_PATTERN = f"{REPOSITORY_PATTERN}|^$"


class DevicePluginImage(Image):
    """The device plugin's image, which a chart may leave to the install."""

    repository: str = Field(
        description="Image repository, without tag: [registry[:port]/]path, as the OCI distribution reference "
        "grammar defines it (lowercase path components). Empty: given at install time (a chart only); the default "
        f"with {products.UNIT_128MIB} units or compute allocation on ACK, which need ACK's own device plugin image.",
        max_length=255,
        pattern=_PLUGIN_REPOSITORY_PATTERN,
    )


class DevicePluginSettings(Component):
    """The gpushare device plugin DaemonSet(s)."""

    image: DevicePluginImage = Field(description="Container image.")


class CgpuSettings(Component):
    """The cGPU installer DaemonSet, run on `cgpu` and `core_mem` nodes."""

    policy: int | None = Field(
        None,
        ge=0,
        le=5,
        description="cGPU scheduling policy the installer writes to every GPU of the node (the policy is per GPU, "
        "/proc/cgpu_km/<gpu>/policy: this is the node default; a container's ALIYUN_COM_GPU_SCHD_WEIGHT > 1 "
        "overrides it): "
        + ", ".join(f"{n} {name}" for n, name in cgpu.POLICIES.items())
        + ". 0 gives every container 1/max_inst of the GPU whatever its gpu-core.percentage; 5 isolates memory "
        "only. Unset (the default): the installer gets no CGPU_POLICY and cGPU keeps its own default, which ACK's "
        "documents do not name; set 3 (fixed) for the percentages compute allocation promises.",
    )


class DoctorSettings(_Model):
    """Access for `gpushare doctor` and `gpushare snapshot`, which read and never write."""

    rbac: bool = Field(
        default=False,  # by name: a type checker without pydantic's plugin (mypyc's build) reads no other default
        description="Create a ServiceAccount with a ClusterRole that may only get and list what doctor and snapshot "
        "read (nodes, pods, ConfigMaps, DaemonSets and what placement reads), bound to it: run doctor with its token.",
    )


class WatchImage(Image):
    """gpushare's own image (the Dockerfile at the repository's root builds it), given at install time."""

    repository: str = Field(
        AT_INSTALL,
        description="Image repository, without tag, of gpushare built from its Dockerfile (docker build -t "
        "<registry>/gpushare:<version> .). Empty: given at install time (--set watch.image.repository=...), as "
        "gpushare publishes no image of its own.",
        max_length=255,
        pattern=_PLUGIN_REPOSITORY_PATTERN,
    )
    tag: str = Field(
        kinds.VERSION,
        description="Image tag (default: the gpushare release that rendered the chart).",
        pattern=r"^[\w][\w.-]{0,127}$|^$",
    )


class WatchAlerts(_Model):
    """The PrometheusRule's thresholds (each default given by name: mypyc's type check reads no other)."""

    pending_minutes: int = Field(
        default=15,
        ge=1,
        le=10_080,
        description="Alert when a GPU pod that would fit after moving running pods (fragmentation) has waited this "
        "many minutes.",
    )
    headroom_below: int = Field(
        default=1,
        ge=1,
        le=1_000_000,
        description="Alert when a template's headroom (replicas that still fit) falls below this.",
    )
    for_minutes: int = Field(
        default=5, ge=0, le=1_440, description="How long a condition holds before its alert fires."
    )


class WatchSettings(Component):
    """`gpushare watch` in the cluster (off by default): the GPU-sharing ledger, fragmentation and headroom as
    Prometheus metrics, with doctor's read-only access, a Service, a ServiceMonitor and a PrometheusRule where the
    cluster serves monitoring.coreos.com/v1, and a Grafana dashboard ConfigMap."""

    enabled: bool = Field(
        default=False,
        description="Run gpushare watch (a Deployment with doctor's read-only ClusterRole, and a Service).",
    )
    image: WatchImage = Field(description="Container image.")
    priority_class_name: str = Field(
        "", description="PriorityClass of the pod (empty: none).", pattern=_OBJECT_NAME, max_length=253
    )
    port: int = Field(9445, ge=1024, le=65535, description="Port of /metrics, /healthz, /readyz, /explain, /capacity.")
    pool_label: str = Field(
        labels.NODE_POOL_LABEL,
        description="The node label whose values make the pools of the pool metrics.",
        min_length=1,
        max_length=317,
    )
    templates: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Pod templates whose headroom to serve, by a name of your choosing: each a Pod or a "
        "Deployment, StatefulSet, ReplicaSet or Job as YAML (a ConfigMap mounted as files).",
    )
    service_monitor_labels: dict[str, str] = Field(
        default_factory=dict,
        description="Labels on the ServiceMonitor and PrometheusRule, for the Prometheus that selects them "
        "(kube-prometheus-stack: release: <its release name>).",
    )
    dashboard: bool = Field(
        default=True, description='A Grafana dashboard as a ConfigMap labelled grafana_dashboard: "1" (the sidecar\'s).'
    )
    alerts: WatchAlerts = Field(default_factory=WatchAlerts, description="The alerts' thresholds.")


class InstallerSettings(_Model):
    """Everything `gpushare render` needs; `apiVersion`/`kind` version the document itself."""

    api_version: kinds.ApiVersion = Field(API_VERSION, description="Settings document version.")
    kind: Literal["InstallerSettings"] = Field(KIND, description="Settings document kind.")
    kubernetes_version: str | None = Field(
        None,
        description=f"Target Kubernetes: a minor {SUPPORTED} or a full v1.X.Y. Unset: a chart that picks the "
        "scheduler configuration from the cluster's version at install time.",
    )

    profile: Literal["ack", "open-source"] = Field(
        products.ACK,
        description="ack: ACK Pro components and rules; open-source: upstream gpushare extender and "
        "device plugin on any cluster.",
    )
    gpu_memory_unit: str = Field(
        description="Unit of aliyun.com/gpu-mem: 1GiB or 128MiB (ack), GiB or MiB "
        "(open-source). Default: 1GiB for ack, GiB for open-source."
    )
    isolation: list[IsolationMode] = Field(
        default_factory=lambda: list[IsolationMode](["share"]),
        min_length=1,
        description="Node modes (ack.node.gpu.schedule) to serve: "
        "share (no isolation), cgpu (memory isolation), core_mem (memory and compute isolation).",
    )
    compute_allocation: bool = Field(
        False, description="Allocate compute (aliyun.com/gpu-core.percentage); ACK Pro with core_mem nodes only."
    )
    region: str | None = Field(
        None,
        description="Alibaba Cloud region ID, e.g. cn-beijing; picks the image "
        "registry and is checked against the compute-allocation region list.",
        pattern=r"^[a-z]{2}-[a-z0-9-]+$",
    )
    namespace: str = Field(
        "kube-system",
        description="Namespace of the installed objects.",
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        max_length=63,
    )
    release_name: str = Field(
        "gpushare",
        description="Helm release name (app.kubernetes.io/instance label).",
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        max_length=53,
    )
    name_override: str | None = Field(
        None,
        description="The name that follows the release's in object names (<release>-<name>; default gpushare). "
        "The pods' app.kubernetes.io/name label stays gpushare: selectors cannot change on upgrade.",
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        max_length=40,
    )
    fullname_override: str | None = Field(
        None,
        description="The prefix of every object's name, instead of <release>-<name> (at most 40 characters).",
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        max_length=40,
    )
    image_pull_secrets: list[LocalObjectReference] = Field(
        default_factory=list,
        description="Secrets of the namespace (kubernetes.io/dockerconfigjson) that pull every image, as "
        "[{name: regcred}]: ACK's registries need one outside ACK, a private mirror does too.",
    )
    scheduler: SchedulerSettings = Field(description="kube-scheduler integration.")
    extender: ExtenderSettings = Field(description="Scheduler extender (secondary and control-plane modes).")
    device_plugin: DevicePluginSettings = Field(description="Device plugin.")
    cgpu: CgpuSettings = Field(description="cGPU installer (cgpu and core_mem nodes).")
    doctor: DoctorSettings = Field(default_factory=DoctorSettings, description="Read-only access for doctor.")
    watch: WatchSettings = Field(description="gpushare watch: live metrics, alerts and a dashboard (off by default).")

    @field_validator("kubernetes_version", mode="before")
    @classmethod
    def _version_text(cls, value: Any) -> Any:
        """YAML reads an unquoted 1.20 as the number 1.2: say so rather than refuse a number nobody wrote."""
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            raise ValueError(f'a quoted version such as "1.{MINORS[0]}" (YAML read an unquoted {value} as a number)')
        return value.strip() if isinstance(value, str) else value

    @model_validator(mode="before")
    @classmethod
    def _profile_defaults(cls, data: Any) -> Any:
        """Fill the defaults that depend on the profile before fields are validated."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        name = data.get("profile", products.ACK)
        profile = products.PROFILES.get(name) if isinstance(name, str) else None
        if profile is None:
            return data  # the Literal check reports the bad profile
        data.setdefault("gpuMemoryUnit", data.pop("gpu_memory_unit", profile.memory_units[0]))
        registry = _registry(name, data.get("region"))
        compute = data.get("computeAllocation", data.get("compute_allocation"))
        for key, snake, image in (
            ("scheduler", "scheduler", {"repository": KUBE_SCHEDULER_IMAGE, "tag": ""}),
            ("extender", "extender", {"repository": f"{registry}/k8s-gpushare-schd-extender", "tag": "1.11-d170d8a"}),
            ("devicePlugin", "device_plugin", _plugin_image(name, data["gpuMemoryUnit"], compute, registry)),
            ("cgpu", "cgpu", {"repository": f"{registry}/cgpu-installer", "tag": "1.5.20"}),
            ("watch", "watch", {"repository": AT_INSTALL, "tag": kinds.VERSION}),
        ):
            section = data.pop(snake, None) if snake != key and snake in data else data.get(key)
            section = dict(section) if isinstance(section, dict) else ({} if section is None else section)
            if isinstance(section, dict):
                given = section.get("image")
                if given is None:
                    section["image"] = image
                elif isinstance(given, dict) and "repository" not in given:  # a tag of the default image
                    section["image"] = {**image, **given}
                section.setdefault("resources", DEFAULT_RESOURCES[key])
                if key == "scheduler":
                    section.setdefault("mode", profile.default_scheduler_mode)
            data[key] = section
        return data

    @property
    def profile_info(self) -> products.Profile:
        return products.PROFILES[self.profile]

    @property
    def version(self) -> KubeVersion | None:
        return None if self.kubernetes_version is None else parse_kube_version(self.kubernetes_version)

    @property
    def served_scheduler_name(self) -> str:
        """The spec.schedulerName whose pods reach the extender: the secondary scheduler's, else the default one."""
        return products.served_scheduler(self.scheduler.mode, self.scheduler.name)

    @property
    def plugin_at_install(self) -> bool:
        """The device plugin's image is left to the install (`AT_INSTALL`): a chart asks for it, manifests cannot."""
        return self.device_plugin.image.repository == AT_INSTALL

    @property
    def ack_plugin_features(self) -> list[str]:
        """What of these settings only ACK's own device plugin serves (`ack_plugin_features`)."""
        return ack_plugin_features(self.profile, self.gpu_memory_unit, self.compute_allocation)

    @property
    def ack_plugin_need(self) -> str:
        """`ack_plugin_features` as a sentence's subject and verb: "128MiB units need", "compute allocation needs"."""
        features = self.ack_plugin_features or ["these settings"]
        plural = len(features) > 1 or features[0].endswith("s")
        return f"{' and '.join(features)} {'need' if plural else 'needs'}"

    @property
    def isolated_modes(self) -> tuple[str, ...]:
        """The modes served whose nodes need the cGPU module."""
        return tuple(m for m in self.isolation if m in labels.ISOLATED_MODES)

    def document(self) -> dict[str, Any]:
        """The settings as a complete YAML-ready document (camelCase, every default spelled out)."""
        return self.model_dump(by_alias=True, mode="json", exclude_none=True)


#: The open-source device plugin's image name (upstream-plugin): it takes `--memory-unit=GiB|MiB` only and falls
#: back to GiB for anything else, so it cannot serve ACK's 128MiB unit.
OPEN_SOURCE_PLUGIN = "k8s-gpushare-plugin"
#: The open-source plugin's release tags: its program is gpushare-device-plugin-v2, published as `v2-1.11-<commit>`.
#: ACK's own plugin may carry the same image name in the same `acs` namespace; with another tag it is taken for ACK's.
OPEN_SOURCE_PLUGIN_TAG = r"^v2($|[-.])"


def is_open_source_plugin(image: Image) -> bool:
    """The open-source plugin, known by its name and a release tag of its own: never refuse ACK's own image for
    sharing a name (a digest alone cannot tell them apart, so it is taken for the image the user meant)."""
    named = image.repository.rsplit("/", 1)[-1] == OPEN_SOURCE_PLUGIN
    return named and re.match(OPEN_SOURCE_PLUGIN_TAG, image.tag) is not None


def ack_plugin_features(profile: str, unit: Any, compute: Any) -> list[str]:
    """What of the settings only ACK's own device plugin serves: 128MiB units (the open-source plugin knows GiB and
    MiB), compute allocation (it reports no gpu-core.percentage capacity; facts section 1)."""
    if profile != products.ACK:
        return []
    return [
        name
        for name, wanted in (
            (f"{products.UNIT_128MIB} units", unit == products.UNIT_128MIB),
            ("compute allocation", compute is True),
        )
        if wanted
    ]


def _plugin_image(profile: str, unit: Any, compute: Any, registry: str) -> dict[str, str]:
    """The device plugin image gpushare picks: the open-source plugin, but where only ACK's own plugin serves the
    settings (`ack_plugin_features`): that one is left to the install (gpushare does not know its image, and never
    invents one)."""
    if ack_plugin_features(profile, unit, compute):
        return {"repository": AT_INSTALL, "tag": ""}
    return {"repository": f"{registry}/{OPEN_SOURCE_PLUGIN}", "tag": "v2-1.11-aff8a23"}


DEFAULT_RESOURCES: dict[str, dict[str, dict[str, str]]] = {
    "scheduler": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
    "extender": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}},
    "devicePlugin": {"requests": {"cpu": "100m", "memory": "300Mi"}, "limits": {"cpu": "1", "memory": "300Mi"}},
    "cgpu": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}},
    # a model of the whole fleet, and doctor's pass in a forked copy beside it: at 5,000 nodes and 150,000 pods
    # about 0.2 GiB and 1.1 GiB more while doctor runs (benchmarks/watch.py)
    "watch": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"cpu": "2", "memory": "2Gi"}},
}


def _registry(profile: str, region: Any) -> str:
    """ACK pulls from the cluster's regional registry; elsewhere the public Hangzhou registry serves."""
    if profile == products.ACK and isinstance(region, str) and region:
        return f"registry-{region}.ack.aliyuncs.com/acs"
    return "registry.cn-hangzhou.aliyuncs.com/acs"


#: Patterns said in words: a message names what is allowed, not a regular expression.
_PATTERN_WORDS = {
    QUANTITY_PATTERN: "a Kubernetes quantity such as 100m, 256Mi or 2",
    REPOSITORY_PATTERN: "an image repository such as registry.example.com/acs/name (host[:port]/, lowercase path)",
    _PLUGIN_REPOSITORY_PATTERN: "an image repository such as registry.example.com/acs/name (host[:port]/, lowercase "
    "path), or empty: given at install time",
}
#: Parts of a validation error's location that name a branch of a union, not a field.
_UNION_BRANCHES = ("constrained-str", "constrained-int", "str", "int")


def _describe_allowed(error: Any) -> str:
    ctx = error.get("ctx") or {}
    if "expected" in ctx:
        return f"one of {ctx['expected']}"
    if error["type"] == "extra_forbidden":
        return "a known setting: " + ", ".join(_known_keys(error["loc"][:-1]))
    if "pattern" in ctx:
        return _PATTERN_WORDS.get(ctx["pattern"], f"a value matching {ctx['pattern']}")
    for key, word in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
        if key in ctx:
            return f"a number {word} {ctx[key]}"
    if "min_length" in ctx:
        return f"at least {ctx['min_length']} item(s)"
    return str(error["msg"]).removeprefix("Input should be ").removeprefix("Value error, ")


def _known_keys(parent: tuple[Any, ...]) -> list[str]:
    """The setting names valid beside an unknown one, for the error message."""
    model: Any = InstallerSettings
    for part in parent:
        fields = {f.alias or name: f for name, f in model.model_fields.items()}
        annotation = fields[str(part)].annotation if str(part) in fields else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return []
        model = annotation
    return [f.alias or name for name, f in model.model_fields.items()]


def load_settings(data: dict[str, Any] | None = None, where: str | None = None) -> InstallerSettings:
    """Validate a settings document (camelCase keys); the first problem becomes one InputError line."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError("settings", type(data).__name__, "a mapping (apiVersion, kind, settings...)", where)
    try:
        settings = InstallerSettings.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        # a value of a union (a quantity: string or number) fails each branch: say the branch its type chose
        error = next((e for e in errors if not str(e["type"]).endswith(("_type", "_parsing"))), errors[0])
        parts = [str(p) for p in error["loc"] if not str(p).startswith("function-") and p not in _UNION_BRANCHES]
        field = ".".join(parts) or "settings"
        raise InputError(field, error.get("input"), _describe_allowed(error), where) from None
    if settings.kubernetes_version is not None:
        parse_kube_version(settings.kubernetes_version)
    for key, flag, component in (
        ("extender", "extender", settings.extender),
        ("devicePlugin", "device-plugin", settings.device_plugin),
        ("cgpu", "cgpu", settings.cgpu),
    ):
        if not component.image.repository:  # the device plugin's, left to the install: given there, tag and all
            continue
        if not component.image.tag and not component.image.digest:  # only the scheduler's tag may follow the cluster
            raise InputError(
                f"{key}.image.tag",
                "",
                f"a tag (--{flag}-image-tag) or a digest for image {component.image.repository}: an empty tag "
                "would pull 'repository:', and a repository of your own takes no default tag",
                where,
            )
    return settings


def settings_schema() -> dict[str, Any]:
    """JSON Schema of the settings document, published as schemas/installer-settings.schema.json."""
    return copy.deepcopy(_settings_schema())


@functools.cache
def _settings_schema() -> dict[str, Any]:
    schema = InstallerSettings.model_json_schema(by_alias=True, mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://gpushare.io/schemas/installer-settings.schema.json"
    # Profile-dependent defaults are filled before validation, so these may be omitted from a document.
    schema["required"] = [
        r
        for r in schema.get("required", [])
        if r not in {"gpuMemoryUnit", "scheduler", "extender", "devicePlugin", "cgpu", "watch"}
    ]
    for name in ("SchedulerSettings", "ExtenderSettings", "DevicePluginSettings", "CgpuSettings"):
        definition = schema["$defs"][name]
        definition["required"] = [r for r in definition.get("required", []) if r not in {"image", "mode"}]
    return schema

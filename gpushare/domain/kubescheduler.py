"""How kube-scheduler chooses among the nodes that fit, per minor and configuration API.

Read from each release's own source, so the dry run scores nodes the way the scheduler the chart installs does:
the score plugins and weights of the default profile (`pkg/scheduler/apis/config/<api>/default_plugins.go`; for
1.20-1.21 `pkg/scheduler/algorithmprovider/registry.go`), the legacy Policy API's priorities
(`pkg/scheduler/framework/plugins/legacy_registry.go`), and the arithmetic that changed between releases
(`framework/plugins/noderesources`, `podtopologyspread`, `helper/spread.go`). Nothing here reads a cluster.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

# Every plugin's name, kube-scheduler's (pkg/scheduler/framework/plugins/names) and gpushare's own: the weights
# below, the profiles and each plugin's module take them from here.
NODE_UNSCHEDULABLE = "NodeUnschedulable"
NODE_RESOURCES_FIT = "NodeResourcesFit"  # scoring strategy LeastAllocated (v1beta2 and later)
LEAST_ALLOCATED = "NodeResourcesLeastAllocated"  # the same score as a plugin of its own (v1beta1, Policy)
BALANCED_ALLOCATION = "NodeResourcesBalancedAllocation"
IMAGE_LOCALITY = "ImageLocality"
INTER_POD_AFFINITY = "InterPodAffinity"
NODE_AFFINITY = "NodeAffinity"
NODE_PORTS = "NodePorts"
PREFER_AVOID_PODS = "NodePreferAvoidPods"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
TAINT_TOLERATION = "TaintToleration"
#: ACK's node modes (`ack.node.gpu.schedule`): which nodes share GPUs, and which allocate compute.
GPU_NODE_MODE = "GPUNodeMode"
#: The GPU-sharing device filter: the open-source extender's, or ACK's allocator's (the same name in a report).
GPU_SHARE = "GPUShare"

Weights = tuple[tuple[str, int], ...]

#: v1beta1 (1.20-1.22) and the 1.20-1.21 algorithm provider: PodTopologySpread doubled, NodePreferAvoidPods 10000.
_V1BETA1: Weights = (
    (BALANCED_ALLOCATION, 1),
    (IMAGE_LOCALITY, 1),
    (INTER_POD_AFFINITY, 1),
    (LEAST_ALLOCATED, 1),
    (NODE_AFFINITY, 1),
    (PREFER_AVOID_PODS, 10000),
    (POD_TOPOLOGY_SPREAD, 2),
    (TAINT_TOLERATION, 1),
)
#: v1beta2 (1.22-1.27): LeastAllocated moved into NodeResourcesFit; NodePreferAvoidPods dropped.
_V1BETA2: Weights = (
    (BALANCED_ALLOCATION, 1),
    (IMAGE_LOCALITY, 1),
    (INTER_POD_AFFINITY, 1),
    (NODE_RESOURCES_FIT, 1),
    (NODE_AFFINITY, 1),
    (POD_TOPOLOGY_SPREAD, 2),
    (TAINT_TOLERATION, 1),
)
#: v1beta3 (1.23-1.28) and v1 (1.25-): user preferences weigh more (taints x3, node affinity x2, pod affinity x2).
_V1BETA3: Weights = (
    (TAINT_TOLERATION, 3),
    (NODE_AFFINITY, 2),
    (NODE_RESOURCES_FIT, 1),
    (POD_TOPOLOGY_SPREAD, 2),
    (INTER_POD_AFFINITY, 2),
    (BALANCED_ALLOCATION, 1),
    (IMAGE_LOCALITY, 1),
)
DEFAULT_WEIGHTS: dict[str, Weights] = {"v1beta1": _V1BETA1, "v1beta2": _V1BETA2, "v1beta3": _V1BETA3, "v1": _V1BETA3}

#: The Policy API's priorities and the plugin each becomes (legacy_registry.go); both spreading priorities become
#: PodTopologySpread with the system default constraints while DefaultPodTopologySpread is on (every 1.20-1.22).
PRIORITY_PLUGINS: dict[str, str] = {
    "BalancedResourceAllocation": BALANCED_ALLOCATION,
    "EvenPodsSpreadPriority": POD_TOPOLOGY_SPREAD,
    "ImageLocalityPriority": IMAGE_LOCALITY,
    "InterPodAffinityPriority": INTER_POD_AFFINITY,
    "LeastRequestedPriority": LEAST_ALLOCATED,
    "NodeAffinityPriority": NODE_AFFINITY,
    "NodePreferAvoidPodsPriority": PREFER_AVOID_PODS,
    "SelectorSpreadPriority": POD_TOPOLOGY_SPREAD,
    "ServiceSpreadingPriority": POD_TOPOLOGY_SPREAD,
    "TaintTolerationPriority": TAINT_TOLERATION,
}
#: A Policy without priorities gets these (legacy_registry.go DefaultPriorities).
LEGACY_DEFAULT_PRIORITIES: dict[str, int] = {
    "SelectorSpreadPriority": 1,
    "InterPodAffinityPriority": 1,
    "LeastRequestedPriority": 1,
    "BalancedResourceAllocation": 1,
    "NodePreferAvoidPodsPriority": 10000,
    "NodeAffinityPriority": 1,
    "TaintTolerationPriority": 1,
    "ImageLocalityPriority": 1,
    "EvenPodsSpreadPriority": 2,
}
#: kube-scheduler 1.22 exits on a Policy that leaves priorities to the defaults ("no kind
#: NodeResourcesLeastAllocatedArgs is registered for version kubescheduler.config.k8s.io/v1beta2", seen with the
#: real 1.22.17 binary); it runs with the defaults named, less the two whose arguments it cannot convert
#: (LeastRequestedPriority, NodePreferAvoidPodsPriority). The generator writes these into 1.22 Policy files.
POLICY_PRIORITIES_1_22: tuple[tuple[str, int], ...] = (
    ("BalancedResourceAllocation", 1),
    ("ImageLocalityPriority", 1),
    ("InterPodAffinityPriority", 1),
    ("NodeAffinityPriority", 1),
    ("TaintTolerationPriority", 1),
    ("SelectorSpreadPriority", 1),
    ("EvenPodsSpreadPriority", 2),
)

#: What a container without a cpu or memory request counts as when nodes are scored (pkg/scheduler/util).
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
MAX_NODE_SCORE = 100

#: System default spreading (podtopologyspread/plugin.go): pods of a Service, ReplicaSet, StatefulSet or
#: ReplicationController spread over hosts (maxSkew 3) and zones (maxSkew 5), as a preference.
HOSTNAME_LABEL = "kubernetes.io/hostname"
ZONE_LABEL = "topology.kubernetes.io/zone"
SYSTEM_DEFAULT_SPREAD: tuple[tuple[str, int], ...] = ((HOSTNAME_LABEL, 3), (ZONE_LABEL, 5))
#: Controllers whose selector the default spreading reads (helper/spread.go DefaultSelector).
SPREAD_OWNER_KINDS: tuple[str, ...] = ("ReplicationController", "ReplicaSet", "StatefulSet")

#: percentageOfNodesToScore's adaptive default (schedule_one.go numFeasibleNodesToFind): from 100 nodes on, the
#: scheduler stops filtering once it has found this many feasible nodes, starting where the last pod's search ended.
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE = 5


def num_feasible_nodes_to_find(all_nodes: int, percentage: int = 0) -> int:
    """How many feasible nodes kube-scheduler looks for before it stops filtering (and scores only those)."""
    if all_nodes < MIN_FEASIBLE_NODES_TO_FIND or percentage >= 100:
        return all_nodes
    adaptive = percentage if percentage > 0 else max(50 - all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE)
    return max(all_nodes * adaptive // 100, MIN_FEASIBLE_NODES_TO_FIND)


def policy_weights(priorities: Iterable[tuple[str, int]]) -> Weights:
    """A Policy's priorities as score plugins: in name order, the first priority that maps to a plugin sets its
    weight (AppendPriorityConfigs sorts the names; appendToPluginSet keeps the first entry, its "keep the max
    weight" updates a copy)."""
    chosen: dict[str, int] = {}
    for name, weight in sorted(dict(priorities).items()):
        plugin = PRIORITY_PLUGINS.get(name)
        if plugin is not None and plugin not in chosen:
            chosen[plugin] = weight
    return tuple(chosen.items())


def rendered_policy_priorities(minor: int) -> tuple[tuple[str, int], ...] | None:
    """The priorities gpushare writes into a Policy file for this minor (None: the Policy names none)."""
    return POLICY_PRIORITIES_1_22 if minor >= 22 else None


@dataclass(frozen=True)
class ScoringProfile:
    """The default profile of one kube-scheduler minor, read through one configuration API."""

    minor: int
    api: str
    weights: Weights
    #: The configuration's percentageOfNodesToScore (0: unset, the adaptive default; 100: every node).
    percentage_of_nodes_to_score: int = 0

    @property
    def label(self) -> str:
        return f"kube-scheduler 1.{self.minor} ({self.api})"

    # --- arithmetic that changed between releases ---------------------------------------------------------------

    @property
    def balanced_by_deviation(self) -> bool:
        """1.22 on: BalancedAllocation is 1 - the standard deviation of the requested fractions (capped at 1), on the
        pods' own requests; before: 1 - |cpu - memory| on the non-zero requests, 0 once either is full."""
        return self.minor >= 22

    @property
    def skips_unallocatable(self) -> bool:
        """1.22 on: LeastAllocated leaves out a resource the node has none of (before, it scored 0 and counted)."""
        return self.minor >= 22

    @property
    def spread_rounds(self) -> bool:
        """1.24 on: PodTopologySpread rounds a node's raw score; before, it truncated it."""
        return self.minor >= 24

    @property
    def spread_selector_by_owner(self) -> bool:
        """1.22 on: the default spreading reads the pod's controller (ownerReferences); before, every Service,
        ReplicaSet, StatefulSet and ReplicationController whose selector matches the pod's labels."""
        return self.minor >= 22

    @property
    def spread_skips_without_constraints(self) -> bool:
        """1.28 on: PodTopologySpread skips a pod without constraints (its score counts 0, not 100 everywhere)."""
        return self.minor >= 28

    @property
    def images_include_init(self) -> bool:
        """1.30 on: ImageLocality sums the init containers' images too, and its ceiling counts them as containers."""
        return self.minor >= 30

    @property
    def balanced_skips_best_effort(self) -> bool:
        """1.33 on: BalancedAllocation scores 0 for a pod that requests no cpu and no memory (kubernetes#129138)."""
        return self.minor >= 33

    @property
    def balanced_by_improvement(self) -> bool:
        """1.36 on: BalancedAllocation scores how much the pod improves the node's balance: 50 + (50 + with - without)
        / 2, each side the 1.22 score of the node's requests with and without the pod."""
        return self.minor >= 36

    @property
    def reads_namespace_selector(self) -> bool:
        """1.22 on: a pod affinity term's namespaceSelector counts (PodAffinityNamespaceSelector, beta and on)."""
        return self.minor >= 22

    @property
    def adds_namespace_name_label(self) -> bool:
        """1.21 on: every namespace carries the label kubernetes.io/metadata.name (NamespaceDefaultLabelName)."""
        return self.minor >= 21

    @property
    def affinity_reason_generic(self) -> bool:
        """1.20-1.21: InterPodAffinity's filter adds "node(s) didn't match pod affinity/anti-affinity" to its reason."""
        return self.minor <= 21

    @property
    def affinity_score_from_zero(self) -> bool:
        """1.20: InterPodAffinity's normalisation starts both its bounds at 0 (min(0, ...), max(0, ...))."""
        return self.minor <= 20

    @property
    def spread_counts_eligible_only(self) -> bool:
        """1.24 on: a hard spreading constraint counts the pods on eligible nodes only; before, on every node in a
        domain some eligible node opened."""
        return self.minor >= 24

    @property
    def reads_inclusion_policies(self) -> bool:
        """1.26 on: nodeAffinityPolicy and nodeTaintsPolicy say which nodes a constraint counts (NodeInclusionPolicy
        InPodTopologySpread); before, the pod's node selector and required affinity."""
        return self.minor >= 26

    @property
    def reads_match_label_keys(self) -> bool:
        """1.27 on: a spread constraint's matchLabelKeys add the pod's own values to its selector."""
        return self.minor >= 27

    @property
    def spread_min_domains(self) -> bool:
        """1.27 on: a hard constraint with fewer eligible domains than minDomains counts its minimum as 0."""
        return self.minor >= 27

    @property
    def retries_at_once(self) -> bool:
        """1.33 on (SchedulerPopFromBackoffQ): a pending pod a bind may have made schedulable is retried as soon as
        the scheduler is idle (gpushare.placement.queue)."""
        return self.minor >= 33

    @property
    def lists_nodes_by_name(self) -> bool:
        """1.27-1.34: kube-scheduler's cache first holds the nodes in the order the API server's watch cache lists
        them, by name (sortableStoreElements, 1.27 on), so its node tree, and the windows a cut search walks, are
        knowable. Before 1.27 the watch cache lists them in map order, and from 1.35 the scheduler's informers
        stream their initial list (WatchListClient, beta and on) into a map: the order changes at every start of
        kube-scheduler, and so may where a pod lands on a fleet of 100 nodes or more."""
        return 27 <= self.minor <= 34

    @property
    def counts_sidecars(self) -> bool:
        """1.29 on (SidecarContainers, beta and on by default): an init container with restartPolicy Always runs
        beside the containers, so its requests add to theirs and to every later init container's (PodRequests).
        Before, the API server drops the field and it is an init container like the others."""
        return self.minor >= 29

    @property
    def sidecar_host_ports(self) -> bool:
        """1.33 on (1.33.6 and 1.34.0, kubernetes#132040): NodePorts counts the host ports of init containers with
        restartPolicy Always (sidecars), of the pod and of those bound; before, containers' ports only."""
        return self.minor >= 33

    @property
    def fit_unresolvable_beyond_allocatable(self) -> bool:
        """1.34 on: NodeResourcesFit's status is UnschedulableAndUnresolvable when a request exceeds what the node
        can allocate at all (fitsRequest's InsufficientResource.Unresolvable), so preemption skips the node."""
        return self.minor >= 34

    @property
    def dra_post_filter(self) -> bool:
        """1.34 on (DynamicResourceAllocation GA, on by default): DynamicResources' PostFilter runs before
        DefaultPreemption and says "no new claims to deallocate" for a pod without claims."""
        return self.minor >= 34

    @property
    def prefers_nominated_node(self) -> bool:
        """1.22 on (PreferNominatedNode, beta and on): a pod nominated by preemption tries its node first, and takes
        it without scoring if it fits (evaluateNominatedNode)."""
        return self.minor >= 22

    @property
    def takes_victimless_candidates(self) -> bool:
        """1.20-1.21: a node where the pod fits once every lower-priority pod is put back is a preemption candidate
        with no victim (the pod is nominated there, nothing deleted); from 1.22 it is an error for that node."""
        return self.minor <= 21

    @property
    def sorts_victims(self) -> bool:
        """1.30 on: SelectVictimsOnNode sorts its victims by importance once found; before, budget violators come
        first, so the victim preemption weighs as "highest priority" may not be."""
        return self.minor >= 30

    @property
    def clears_nomination_without_candidates(self) -> bool:
        """1.24 on: preemption that finds no candidate clears the pod's nominatedNodeName (a PostFilter result
        with an empty node); before, only when no node was worth trying at all."""
        return self.minor >= 24

    @property
    def nominated_search_resets_start(self) -> bool:
        """1.22-1.24: trying a nominated node first searches a list of that one node, and the search's end is taken
        modulo its length: the next search starts at the first node again (kubernetes#110947 fixed it in 1.25)."""
        return 22 <= self.minor <= 24

    @property
    def unfiltered_nodes_unresolvable(self) -> bool:
        """1.28 on (kubernetes#125197; the pinned 1.28.15 has it): a node the search never filtered counts as
        UnschedulableAndUnresolvable for preemption ("Preemption is not helpful"); before, its missing status read
        as a success and preemption tried it."""
        return self.minor >= 28

    @property
    def extender_appends_reasons(self) -> bool:
        """1.20-1.31: an extender's failure is appended to a node's status; 1.32 on it replaces it. A nominated pod
        whose node passes the filters but not the extender is rejected there twice (the node first, then with
        every node), and its message counts that node's reason twice."""
        return self.minor <= 31

    def extender_bind_failure(self, url_prefix: str) -> str:
        """The pod's PodScheduled condition when the extender's bind answers HTTP 500 (HTTPExtender.send): before
        1.28 the binding cycle's failure is prefixed "binding rejected: "."""
        text = f"failed bind with extender at URL {url_prefix}/bind, code 500"
        return f"binding rejected: {text}" if self.minor <= 27 else text

    def fit_error(self, filters: str, post_filter: str, error: bool) -> str:
        """FitError.Error(): the filters' message ("0/N nodes are available: ...") and PostFilter's status message.
        Before 1.24 the pod's condition holds the filters' part only; 1.24 adds PostFilter's after a space unless its
        code was an error; 1.25-1.28 end it with one more full stop (SeparatorFormat " %v."); 1.29 on add it as it
        is."""
        if not post_filter or self.minor < 24 or (error and self.minor == 24):
            return filters
        return f"{filters} {post_filter}." if 25 <= self.minor <= 28 else f"{filters} {post_filter}"

    def weight(self, plugin: str) -> int:
        return dict(self.weights).get(plugin, 0)

    # --- the filters' words ---------------------------------------------------------------------------------------

    def taint_reason(self, key: str, value: str) -> str:
        if self.minor >= 34:
            return "node(s) had untolerated taint(s)"
        if self.minor >= 24:
            return f"node(s) had untolerated taint {{{key}: {value}}}"
        return f"node(s) had taint {{{key}: {value}}}, that the pod didn't tolerate"

    @property
    def affinity_reason(self) -> str:
        return (
            "node(s) didn't match Pod's node affinity"
            if self.minor <= 20
            else ("node(s) didn't match Pod's node affinity/selector")
        )


# --- Go's arithmetic, where Python's differs -----------------------------------------------------------------------

_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_LOG_COEFFICIENTS = (
    6.666666666666735130e-01,
    3.999999999940941908e-01,
    2.857142874366239149e-01,
    2.222219843214978396e-01,
    1.818357216161805012e-01,
    1.531383769920937332e-01,
    1.479819860511658591e-01,
)
_HALF_SQRT2 = 7.07106781186547524401e-01


def go_log(x: float) -> float:
    """Go's `math.Log` as kube-scheduler runs it on amd64, bit for bit (for x > 0).

    PodTopologySpread weighs counts by log(nodes + 2) and truncates or rounds the sum, so one ulp can move a score
    across an integer. Python's `math.log` (the C library's) differs from Go's for about 1% of integers; Go's amd64
    assembly evaluates fdlibm's e_log.c reduction and polynomial in plain double steps, repeated here in the same
    order (checked equal on every integer from 2 to 2,000,000)."""
    f1, exponent = math.frexp(x)
    if f1 <= _HALF_SQRT2:
        f1 *= 2
        exponent -= 1
    f = f1 - 1
    k = float(exponent)
    s = f / (2 + f)
    s2 = s * s
    s4 = s2 * s2
    l1, l2, l3, l4, l5, l6, l7 = _LOG_COEFFICIENTS
    t1 = s2 * (l1 + s4 * (l3 + s4 * (l5 + s4 * l7)))
    t2 = s4 * (l2 + s4 * (l4 + s4 * l6))
    r = t1 + t2
    hfsq = 0.5 * f * f
    return k * _LN2_HI - ((hfsq - (s * (hfsq + r) + k * _LN2_LO)) - f)


def go_round(x: float) -> int:
    """Go's `math.Round` (half away from zero) of a non-negative float, exactly (x - floor(x) is exact)."""
    whole = math.floor(x)
    return int(whole) + (1 if x - whole >= 0.5 else 0)

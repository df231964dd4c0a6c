"""PodTopologySpread: kube-scheduler's topology spread constraints (v1.37), filter and score.

Filtering uses the pod's ``DoNotSchedule`` constraints. PreFilter counts, per constraint, the
matching pods in every topology domain over the nodes that carry *all* the constraints' keys
and pass the constraint's node inclusion policies; counts live in a numpy array indexed by the
snapshot's domain id of the key, so Filter answers a whole batch of nodes with one fancy
index ``counts[domain_ids[rows]]``. A node fails when
``count[its domain] + (1 if the pod matches itself) - global minimum > maxSkew``; the global
minimum is 0 while fewer than ``minDomains`` domains are eligible.

Scoring uses the ``ScheduleAnyway`` constraints, or the profile's default constraints when the
pod declares none. Raw scores follow upstream (``round(Σ count·ln(#domains + 2) + maxSkew - 1)``)
and are normalised so the emptiest domain scores 100.

Default constraints (``defaultingType: System`` or ``List``): upstream derives their selector from
the Services, ReplicaSets, StatefulSets and ReplicationControllers selecting the pod. We do not
watch those objects, so the default selector here is *"pods of the same controller"*: pods in the
pod's namespace whose controller ownerReference has the same kind and name, for pods owned by a
ReplicaSet, StatefulSet or ReplicationController. A pod without such an owner gets no default
constraints (upstream would still spread it when a Service selects it). For a Deployment's pods
this equals upstream's ReplicaSet selector (which includes ``pod-template-hash``).

Hypothetical pods: a view row with ``added``/``removed`` pods is evaluated against a copy of the
counts adjusted for that node only (upstream's AddPod/RemovePod), the global minimum recomputed
exactly. Deviation, on purpose: a hypothetical pod counts only if it would have been counted by
PreFilter (same namespace, not terminating, non-empty selector); upstream's RemovePod also
decrements for terminating victims that PreFilter never counted.

Cost: the pods matching a selector come from the cache's label index once per cycle, shared with
InterPodAffinity (``MatchedPods`` in the CycleState); the default constraints' pods come from
the cache's index by controller owner (a lookup, then their node rows), never a pass over all
pods; node-affinity and taint masks are cached in the snapshot's node masks. Nothing loops over
nodes in Python on the fast path.
"""

from scheduler.plugins.pod_topology_spread.args import (
    LABEL_HOSTNAME,
    LABEL_TOPOLOGY_ZONE,
    NAME,
    SYSTEM_DEFAULT_CONSTRAINTS,
    PodTopologySpreadArgs,
)
from scheduler.plugins.pod_topology_spread.filtering import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    ConstraintSkew,
    filter_skews,
)
from scheduler.plugins.pod_topology_spread.plugin import SPEC, PodTopologySpread, new

__all__ = [
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "LABEL_HOSTNAME",
    "LABEL_TOPOLOGY_ZONE",
    "NAME",
    "SPEC",
    "SYSTEM_DEFAULT_CONSTRAINTS",
    "ConstraintSkew",
    "PodTopologySpread",
    "PodTopologySpreadArgs",
    "filter_skews",
    "new",
]

"""InterPodAffinity: required pod (anti-)affinity as a filter, preferred terms as a score (v1.37).

PreFilter resolves the incoming pod's required terms (``namespaceSelector`` unrolled into a
namespace set, as upstream's ``mergeAffinityTermNamespacesIfNotEmpty``) and counts, per term and
topology domain, the existing pods that match: one numpy array per term indexed by the
snapshot's domain id of the term's key. It also counts, per topology key, the existing pods
whose required anti-affinity terms match the incoming pod (symmetry). Filter then answers a
batch of nodes with fancy indexing, checking in upstream's order (the first failure decides):

1. affinity: the node has every term's key and each term's domain holds a pod matching *all*
   terms, unless no such pod exists anywhere and the pod matches its own terms (the first pod
   of a self-affine group) — ``UnschedulableAndUnresolvable``;
2. the incoming pod's anti-affinity — ``Unschedulable``;
3. existing pods' anti-affinity — ``Unschedulable``.

This is the classic algorithm (``InterPodAffinityHostnameFastPath`` is alpha and off in v1.37):
hostname terms are counted per hostname label value like any other key.

Scoring sums, per topology domain, the weights of the incoming pod's preferred terms matched by
existing pods (anti-affinity negative), existing pods' required affinity terms matching the
incoming pod (``hardPodAffinityWeight``) and existing pods' preferred terms matching it;
a node's raw score is the sum over keys of its domains' values, normalised min-max to 0..100.

Hypothetical pods on a view row are applied to a copy of the counts for that node only, as
upstream's AddPod/RemovePod do with a cloned state.

Cost: the pods matching a selector are fetched from the cache's label index once per cycle and
shared with PodTopologySpread through the CycleState (:class:`MatchedPods`); existing pods with
terms are kept grouped by equal terms across cycles (:class:`PodGroups`), so symmetry and
scoring match each distinct term once instead of once per pod.
"""

from scheduler.plugins.inter_pod_affinity.args import NAME, InterPodAffinityArgs
from scheduler.plugins.inter_pod_affinity.filtering import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
)
from scheduler.plugins.inter_pod_affinity.plugin import SPEC, InterPodAffinity, new

__all__ = [
    "ERR_REASON_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH",
    "NAME",
    "SPEC",
    "InterPodAffinity",
    "InterPodAffinityArgs",
    "new",
]

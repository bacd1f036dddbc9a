"""kube-apiserver 1.28's priorities of the group versions it serves, as its aggregator registers them: the order of
discovery's groups (highest first, then by name) and the Local APIServices' spec (server/controllers/apiservices.py).
"""

from __future__ import annotations

CRD_GROUP_PRIORITY, CRD_VERSION_PRIORITY = 1000, 100  # crdRegistrationController's, for every CRD group version
# The aggregator's own group, listed first in discovery without an APIService of its own: above every priority.
AGGREGATOR_GROUP, AGGREGATOR_RANK = "apiregistration.k8s.io", 1 << 30

# kube-apiserver 1.28's apiVersionPriorities: (group, version) -> (groupPriorityMinimum, versionPriority).
# apiregistration.k8s.io is not in it: the aggregator serves that group itself and lists it first in discovery
# without an APIService, so kube has no v1.apiregistration.k8s.io object and neither do we.
PRIORITIES: dict[tuple[str, str], tuple[int, int]] = {
    ("", "v1"): (18000, 1),
    ("apps", "v1"): (17800, 15),
    ("events.k8s.io", "v1"): (17750, 15),
    ("authentication.k8s.io", "v1"): (17700, 15),
    ("authorization.k8s.io", "v1"): (17600, 15),
    ("autoscaling", "v1"): (17500, 15),
    ("autoscaling", "v2"): (17500, 30),
    ("batch", "v1"): (17400, 15),
    ("certificates.k8s.io", "v1"): (17300, 15),
    ("networking.k8s.io", "v1"): (17200, 15),
    ("policy", "v1"): (17100, 15),
    ("rbac.authorization.k8s.io", "v1"): (17000, 15),
    ("storage.k8s.io", "v1"): (16800, 15),
    ("apiextensions.k8s.io", "v1"): (16700, 15),
    ("admissionregistration.k8s.io", "v1"): (16700, 15),
    ("admissionregistration.k8s.io", "v1beta1"): (16700, 12),
    ("admissionregistration.k8s.io", "v1alpha1"): (16700, 9),
    ("scheduling.k8s.io", "v1"): (16600, 15),
    ("coordination.k8s.io", "v1"): (16500, 15),
    ("node.k8s.io", "v1"): (16300, 15),
    ("discovery.k8s.io", "v1"): (16200, 15),
    ("flowcontrol.apiserver.k8s.io", "v1beta3"): (16100, 18),
    ("flowcontrol.apiserver.k8s.io", "v1beta2"): (16100, 15),
    ("internal.apiserver.k8s.io", "v1alpha1"): (16000, 9),
    ("resource.k8s.io", "v1alpha2"): (15900, 9),
}


def group_priority(group: str, version: str) -> int:
    """The groupPriorityMinimum of a served group version: kube's for a built-in one, a CRD's for any other, and
    for the aggregator's own group a rank above all of them."""
    if group == AGGREGATOR_GROUP:
        return AGGREGATOR_RANK
    return PRIORITIES.get((group, version), (CRD_GROUP_PRIORITY, 0))[0]

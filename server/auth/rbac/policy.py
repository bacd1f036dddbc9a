"""kube-apiserver's bootstrap policy (bootstrappolicy/policy.go and namespace_policy.go, as kube-apiserver 1.28
writes it): the default ClusterRoles and ClusterRoleBindings, and the Roles and RoleBindings of kube-system and
kube-public, as data. Every object carries the label `kubernetes.io/bootstrapping: rbac-defaults` and the
annotation `rbac.authorization.kubernetes.io/autoupdate: "true"`; reconcile.py writes them at start, with the
controllers' roles (controllerpolicy.py).

The namespaced ones are for the components beside an API server: kube-controller-manager's and kube-scheduler's
leader locks and their reading of the `extension-apiserver-authentication` ConfigMap (an extension API server's
installation binds its ServiceAccount to that reader role too), and the bootstrap-token controllers'.
"""

from __future__ import annotations

from typing import Any

GROUP = "rbac.authorization.k8s.io"
AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"
BOOTSTRAPPING = {"kubernetes.io/bootstrapping": "rbac-defaults"}
AGGREGATE_TO_ADMIN = "rbac.authorization.k8s.io/aggregate-to-admin"
AGGREGATE_TO_EDIT = "rbac.authorization.k8s.io/aggregate-to-edit"
AGGREGATE_TO_VIEW = "rbac.authorization.k8s.io/aggregate-to-view"
CORE, APPS, EXTENSIONS = ("",), ("apps",), ("extensions",)
EVENTS = ("", "events.k8s.io")
READ = "get list watch"
WRITE = "create delete deletecollection patch update"
ALL_VERBS = "create delete deletecollection get list patch update watch"

Obj = dict[str, Any]


def rule(verbs: str, groups: tuple[str, ...], resources: str, names: tuple[str, ...] = ()) -> Obj:
    out: Obj = {"apiGroups": list(groups), "resources": resources.split()}
    if names:
        out["resourceNames"] = list(names)
    out["verbs"] = verbs.split()
    return out


def urls(verbs: str, paths: str) -> Obj:
    return {"nonResourceURLs": paths.split(), "verbs": verbs.split()}


def _metadata(name: str, labels: dict[str, str] | None = None) -> Obj:
    return {"name": name, "labels": {**BOOTSTRAPPING, **(labels or {})}, "annotations": {AUTOUPDATE: "true"}}


def cluster_role(name: str, rules: list[Obj], *, labels: dict[str, str] | None = None,
                 aggregate_from: str = "") -> Obj:
    role: Obj = {"apiVersion": f"{GROUP}/v1", "kind": "ClusterRole", "metadata": _metadata(name, labels)}
    if aggregate_from:
        role["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {aggregate_from: "true"}}]}
    role["rules"] = rules
    return role


def cluster_binding(name: str, subjects: list[tuple[str, str]], role: str = "") -> Obj:
    """subjects: (kind, name); a ServiceAccount's name is namespace/name."""
    listed: list[Obj] = []
    for kind, subject in subjects:
        if kind == "ServiceAccount":
            namespace, _, sa = subject.partition("/")
            listed.append({"kind": kind, "name": sa, "namespace": namespace})
        else:
            listed.append({"apiGroup": GROUP, "kind": kind, "name": subject})
    binding: Obj = {"apiVersion": f"{GROUP}/v1", "kind": "ClusterRoleBinding", "metadata": _metadata(name),
                    "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role or name}}
    if listed:
        binding["subjects"] = listed
    return binding


_TOKEN_AND_ACCESS_REVIEWS = [
    rule("create", ("authentication.k8s.io",), "tokenreviews"),
    rule("create", ("authorization.k8s.io",), "subjectaccessreviews"),
]


def _leader_election(holder: str) -> list[Obj]:
    return [
        rule("create patch update", EVENTS, "events"),
        rule("create", ("coordination.k8s.io",), "leases"),
        rule("get update", ("coordination.k8s.io",), "leases", (holder,)),
    ]


def _signer_approver(signer: str) -> list[Obj]:
    return [rule("approve", ("certificates.k8s.io",), "signers", (f"kubernetes.io/{signer}",))]


CLUSTER_ROLES: list[Obj] = [
    cluster_role("admin", [], aggregate_from=AGGREGATE_TO_ADMIN),
    cluster_role("cluster-admin", [rule("*", ("*",), "*"), urls("*", "*")]),
    cluster_role("edit", [], labels={AGGREGATE_TO_ADMIN: "true"}, aggregate_from=AGGREGATE_TO_EDIT),
    cluster_role("system:aggregate-to-admin", [
        rule("create", ("authorization.k8s.io",), "localsubjectaccessreviews"),
        rule(ALL_VERBS, (GROUP,), "rolebindings roles"),
    ], labels={AGGREGATE_TO_ADMIN: "true"}),
    cluster_role("system:aggregate-to-edit", [
        rule(READ, CORE, "pods/attach pods/exec pods/portforward pods/proxy secrets services/proxy"),
        rule("impersonate", CORE, "serviceaccounts"),
        rule(WRITE, CORE, "pods pods/attach pods/exec pods/portforward pods/proxy"),
        rule("create", CORE, "pods/eviction"),
        rule(WRITE, CORE, "configmaps events persistentvolumeclaims replicationcontrollers "
                          "replicationcontrollers/scale secrets serviceaccounts services services/proxy"),
        rule("create", CORE, "serviceaccounts/token"),
        rule(WRITE, APPS, "daemonsets deployments deployments/rollback deployments/scale replicasets "
                          "replicasets/scale statefulsets statefulsets/scale"),
        rule(WRITE, ("autoscaling",), "horizontalpodautoscalers"),
        rule(WRITE, ("batch",), "cronjobs jobs"),
        rule(WRITE, EXTENSIONS, "daemonsets deployments deployments/rollback deployments/scale ingresses "
                                "networkpolicies replicasets replicasets/scale replicationcontrollers/scale"),
        rule(WRITE, ("policy",), "poddisruptionbudgets"),
        rule(WRITE, ("networking.k8s.io",), "ingresses networkpolicies"),
        rule(ALL_VERBS, ("coordination.k8s.io",), "leases"),
    ], labels={AGGREGATE_TO_EDIT: "true"}),
    cluster_role("system:aggregate-to-view", [
        rule(READ, CORE, "configmaps endpoints persistentvolumeclaims persistentvolumeclaims/status pods "
                         "replicationcontrollers replicationcontrollers/scale serviceaccounts services "
                         "services/status"),
        rule(READ, CORE, "bindings events limitranges namespaces/status pods/log pods/status "
                         "replicationcontrollers/status resourcequotas resourcequotas/status"),
        rule(READ, CORE, "namespaces"),
        rule(READ, ("discovery.k8s.io",), "endpointslices"),
        rule(READ, APPS, "controllerrevisions daemonsets daemonsets/status deployments deployments/scale "
                         "deployments/status replicasets replicasets/scale replicasets/status statefulsets "
                         "statefulsets/scale statefulsets/status"),
        rule(READ, ("autoscaling",), "horizontalpodautoscalers horizontalpodautoscalers/status"),
        rule(READ, ("batch",), "cronjobs cronjobs/status jobs jobs/status"),
        rule(READ, EXTENSIONS, "daemonsets daemonsets/status deployments deployments/scale deployments/status "
                               "ingresses ingresses/status networkpolicies replicasets replicasets/scale "
                               "replicasets/status replicationcontrollers/scale"),
        rule(READ, ("policy",), "poddisruptionbudgets poddisruptionbudgets/status"),
        rule(READ, ("networking.k8s.io",), "ingresses ingresses/status networkpolicies"),
    ], labels={AGGREGATE_TO_VIEW: "true"}),
    cluster_role("system:auth-delegator", list(_TOKEN_AND_ACCESS_REVIEWS)),
    cluster_role("system:basic-user", [
        rule("create", ("authorization.k8s.io",), "selfsubjectaccessreviews selfsubjectrulesreviews"),
        rule("create", ("authentication.k8s.io",), "selfsubjectreviews"),
    ]),
    cluster_role("system:certificates.k8s.io:certificatesigningrequests:nodeclient", [
        rule("create", ("certificates.k8s.io",), "certificatesigningrequests/nodeclient")]),
    cluster_role("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", [
        rule("create", ("certificates.k8s.io",), "certificatesigningrequests/selfnodeclient")]),
    cluster_role("system:certificates.k8s.io:kube-apiserver-client-approver",
                 _signer_approver("kube-apiserver-client")),
    cluster_role("system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
                 _signer_approver("kube-apiserver-client-kubelet")),
    cluster_role("system:certificates.k8s.io:kubelet-serving-approver", _signer_approver("kubelet-serving")),
    cluster_role("system:certificates.k8s.io:legacy-unknown-approver", _signer_approver("legacy-unknown")),
    cluster_role("system:discovery", [
        urls("get", "/api /api/* /apis /apis/* /healthz /livez /openapi /openapi/* /readyz /version /version/")]),
    cluster_role("system:heapster", [
        rule(READ, CORE, "events namespaces nodes pods"),
        rule(READ, EXTENSIONS, "deployments"),
    ]),
    cluster_role("system:kube-aggregator", [rule(READ, CORE, "endpoints services")]),
    cluster_role("system:kube-controller-manager", [
        *_leader_election("kube-controller-manager"),
        rule("create", CORE, "secrets serviceaccounts"),
        rule("delete", CORE, "secrets"),
        rule("get", CORE, "configmaps namespaces secrets serviceaccounts"),
        rule("update", CORE, "secrets serviceaccounts"),
        *_TOKEN_AND_ACCESS_REVIEWS,
        rule("list watch", ("*",), "*"),
        rule("create", CORE, "serviceaccounts/token"),
    ]),
    cluster_role("system:kube-dns", [rule("list watch", CORE, "endpoints services")]),
    cluster_role("system:kube-scheduler", [
        *_leader_election("kube-scheduler"),
        rule(READ, CORE, "nodes"),
        rule("delete get list watch", CORE, "pods"),
        rule("create", CORE, "bindings pods/binding"),
        rule("patch update", CORE, "pods/status"),
        rule(READ, CORE, "replicationcontrollers services"),
        rule(READ, ("apps", "extensions"), "replicasets"),
        rule(READ, APPS, "statefulsets"),
        rule(READ, ("policy",), "poddisruptionbudgets"),
        rule(READ, CORE, "persistentvolumeclaims persistentvolumes"),
        *_TOKEN_AND_ACCESS_REVIEWS,
        rule(READ, ("storage.k8s.io",), "csinodes"),
        rule(READ, CORE, "namespaces"),
        rule(READ, ("storage.k8s.io",), "csidrivers"),
        rule(READ, ("storage.k8s.io",), "csistoragecapacities"),
    ]),
    cluster_role("system:kubelet-api-admin", [
        rule(READ, CORE, "nodes"),
        rule("proxy", CORE, "nodes"),
        rule("*", CORE, "nodes/log nodes/metrics nodes/proxy nodes/stats"),
    ]),
    cluster_role("system:monitoring", [
        urls("get", "/healthz /healthz/* /livez /livez/* /metrics /metrics/slis /readyz /readyz/*")]),
    cluster_role("system:node", [
        rule("create", ("authentication.k8s.io",), "tokenreviews"),
        rule("create", ("authorization.k8s.io",), "localsubjectaccessreviews subjectaccessreviews"),
        rule(READ, CORE, "services"),
        rule("create get list watch", CORE, "nodes"),
        rule("patch update", CORE, "nodes/status"),
        rule("patch update", CORE, "nodes"),
        rule("create patch update", CORE, "events"),
        rule(READ, CORE, "pods"),
        rule("create delete", CORE, "pods"),
        rule("patch update", CORE, "pods/status"),
        rule("create", CORE, "pods/eviction"),
        rule(READ, CORE, "configmaps secrets"),
        rule("get", CORE, "persistentvolumeclaims persistentvolumes"),
        rule("get", CORE, "endpoints"),
        rule("create get list watch", ("certificates.k8s.io",), "certificatesigningrequests"),
        rule("create delete get patch update", ("coordination.k8s.io",), "leases"),
        rule("get", ("storage.k8s.io",), "volumeattachments"),
        rule("create", CORE, "serviceaccounts/token"),
        rule("get patch update", CORE, "persistentvolumeclaims/status"),
        rule(READ, ("storage.k8s.io",), "csidrivers"),
        rule("create delete get patch update", ("storage.k8s.io",), "csinodes"),
        rule(READ, ("node.k8s.io",), "runtimeclasses"),
    ]),
    cluster_role("system:node-bootstrapper", [
        rule("create get list watch", ("certificates.k8s.io",), "certificatesigningrequests")]),
    cluster_role("system:node-problem-detector", [
        rule("get", CORE, "nodes"),
        rule("patch", CORE, "nodes/status"),
        rule("create patch update", EVENTS, "events"),
    ]),
    cluster_role("system:node-proxier", [
        rule("list watch", CORE, "endpoints services"),
        rule(READ, CORE, "nodes"),
        rule("create patch update", EVENTS, "events"),
        rule("list watch", ("discovery.k8s.io",), "endpointslices"),
    ]),
    cluster_role("system:persistent-volume-provisioner", [
        rule("create delete get list watch", CORE, "persistentvolumes"),
        rule("get list update watch", CORE, "persistentvolumeclaims"),
        rule(READ, ("storage.k8s.io",), "storageclasses"),
        rule("watch", CORE, "events"),
        rule("create patch update", EVENTS, "events"),
    ]),
    cluster_role("system:public-info-viewer", [urls("get", "/healthz /livez /readyz /version /version/")]),
    cluster_role("system:service-account-issuer-discovery", [
        urls("get", "/.well-known/openid-configuration /.well-known/openid-configuration/ /openid/v1/jwks "
                    "/openid/v1/jwks/")]),
    cluster_role("system:volume-scheduler", [
        rule("get list patch update watch", CORE, "persistentvolumes"),
        rule(READ, ("storage.k8s.io",), "storageclasses"),
        rule("get list patch update watch", CORE, "persistentvolumeclaims"),
    ]),
    cluster_role("view", [], labels={AGGREGATE_TO_EDIT: "true"}, aggregate_from=AGGREGATE_TO_VIEW),
]

AUTHENTICATED, UNAUTHENTICATED = ("Group", "system:authenticated"), ("Group", "system:unauthenticated")

def namespaced_role(namespace: str, name: str, rules: list[Obj]) -> Obj:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Role", "metadata": {**_metadata(name), "namespace": namespace},
            "rules": rules}


def namespaced_binding(namespace: str, name: str, subjects: list[tuple[str, str]], role: str = "") -> Obj:
    """A RoleBinding to the Role `role` (default: `name`) of its namespace; subjects as cluster_binding's."""
    binding = cluster_binding(name, subjects, role)
    binding["kind"] = "RoleBinding"
    binding["metadata"]["namespace"] = namespace
    binding["roleRef"]["kind"] = "Role"
    return binding


def _leader_locking(holder: str) -> list[Obj]:
    return [rule("watch", CORE, "configmaps"), rule("get update", CORE, "configmaps", (holder,))]


KUBE_SYSTEM, KUBE_PUBLIC = "kube-system", "kube-public"
CONTROLLER_MANAGER, SCHEDULER = "system:kube-controller-manager", "system:kube-scheduler"

ROLES: list[Obj] = [
    namespaced_role(KUBE_PUBLIC, "system:controller:bootstrap-signer", [
        rule(READ, CORE, "configmaps"),
        rule("update", CORE, "configmaps", ("cluster-info",)),
        rule("create patch update", EVENTS, "events"),
    ]),
    namespaced_role(KUBE_SYSTEM, "extension-apiserver-authentication-reader",
                    [rule(READ, CORE, "configmaps", ("extension-apiserver-authentication",))]),
    namespaced_role(KUBE_SYSTEM, "system::leader-locking-kube-controller-manager",
                    _leader_locking("kube-controller-manager")),
    namespaced_role(KUBE_SYSTEM, "system::leader-locking-kube-scheduler", _leader_locking("kube-scheduler")),
    namespaced_role(KUBE_SYSTEM, "system:controller:bootstrap-signer", [rule(READ, CORE, "secrets")]),
    namespaced_role(KUBE_SYSTEM, "system:controller:cloud-provider",
                    [rule("create get list watch", CORE, "configmaps")]),
    namespaced_role(KUBE_SYSTEM, "system:controller:token-cleaner", [
        rule("delete get list watch", CORE, "secrets"),
        rule("create patch update", EVENTS, "events"),
    ]),
]

ROLE_BINDINGS: list[Obj] = [
    namespaced_binding(KUBE_PUBLIC, "system:controller:bootstrap-signer",
                       [("ServiceAccount", "kube-system/bootstrap-signer")]),
    namespaced_binding(KUBE_SYSTEM, "system::extension-apiserver-authentication-reader",
                       [("User", CONTROLLER_MANAGER), ("User", SCHEDULER)],
                       role="extension-apiserver-authentication-reader"),
    namespaced_binding(KUBE_SYSTEM, "system::leader-locking-kube-controller-manager",
                       [("User", CONTROLLER_MANAGER), ("ServiceAccount", "kube-system/kube-controller-manager")]),
    namespaced_binding(KUBE_SYSTEM, "system::leader-locking-kube-scheduler",
                       [("User", SCHEDULER), ("ServiceAccount", "kube-system/kube-scheduler")]),
    namespaced_binding(KUBE_SYSTEM, "system:controller:bootstrap-signer",
                       [("ServiceAccount", "kube-system/bootstrap-signer")]),
    namespaced_binding(KUBE_SYSTEM, "system:controller:cloud-provider",
                       [("ServiceAccount", "kube-system/cloud-provider")]),
    namespaced_binding(KUBE_SYSTEM, "system:controller:token-cleaner",
                       [("ServiceAccount", "kube-system/token-cleaner")]),
]


CLUSTER_ROLE_BINDINGS: list[Obj] = [
    cluster_binding("cluster-admin", [("Group", "system:masters")]),
    cluster_binding("system:monitoring", [("Group", "system:monitoring")]),
    cluster_binding("system:discovery", [AUTHENTICATED]),
    cluster_binding("system:basic-user", [AUTHENTICATED]),
    cluster_binding("system:public-info-viewer", [AUTHENTICATED, UNAUTHENTICATED]),
    cluster_binding("system:node-proxier", [("User", "system:kube-proxy")]),
    cluster_binding("system:kube-controller-manager", [("User", "system:kube-controller-manager")]),
    cluster_binding("system:kube-dns", [("ServiceAccount", "kube-system/kube-dns")]),
    cluster_binding("system:kube-scheduler", [("User", "system:kube-scheduler")]),
    cluster_binding("system:volume-scheduler", [("User", "system:kube-scheduler")]),
    # Kept with no subjects, as kube does since the Node authorizer replaced it.
    cluster_binding("system:node", []),
    cluster_binding("system:service-account-issuer-discovery", [("Group", "system:serviceaccounts")]),
]

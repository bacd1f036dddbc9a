"""kube-controller-manager's controllers' roles in kube-apiserver's bootstrap policy (bootstrappolicy/
controller_policy.go, 1.28): ClusterRole `system:controller:NAME` bound to ServiceAccount kube-system/NAME.

kube-controller-manager with `--use-service-account-credentials` (kubeadm's default) runs each controller as its
own ServiceAccount, and each is allowed only what its role says; so the real kube-controller-manager runs against
Capstan as against kube-apiserver. Capstan's own controllers run as the core and need none of them.
"""

from __future__ import annotations

from server.auth.rbac.policy import APPS, CORE, EVENTS, READ, Obj, cluster_binding, cluster_role, rule

PREFIX = "system:controller:"
NAMESPACE = "kube-system"

# Each controller's rules, in kube's order.
CONTROLLERS: dict[str, list[Obj]] = {
    "attachdetach-controller": [
        rule("list watch", CORE, "persistentvolumeclaims persistentvolumes"),
        rule(READ, CORE, "nodes"),
        rule("patch update", CORE, "nodes/status"),
        rule("list watch", CORE, "pods"),
        rule("create patch update", EVENTS, "events"),
        rule("create delete get list watch", ("storage.k8s.io",), "volumeattachments"),
        rule(READ, ("storage.k8s.io",), "csidrivers"),
        rule(READ, ("storage.k8s.io",), "csinodes"),
    ],
    "certificate-controller": [
        rule("delete get list watch", ("certificates.k8s.io",), "certificatesigningrequests"),
        rule("update", ("certificates.k8s.io",),
            "certificatesigningrequests/approval certificatesigningrequests/status"),
        rule("approve", ("certificates.k8s.io",), "signers", ("kubernetes.io/kube-apiserver-client-kubelet",)),
        rule("sign", ("certificates.k8s.io",), "signers", (
            "kubernetes.io/kube-apiserver-client", "kubernetes.io/kube-apiserver-client-kubelet",
            "kubernetes.io/kubelet-serving", "kubernetes.io/legacy-unknown")),
        rule("create", ("authorization.k8s.io",), "subjectaccessreviews"),
        rule("create patch update", EVENTS, "events"),
    ],
    "clusterrole-aggregation-controller": [
        rule("escalate get list patch update watch", ("rbac.authorization.k8s.io",), "clusterroles"),
    ],
    "cronjob-controller": [
        rule("get list update watch", ("batch",), "cronjobs"),
        rule("create delete get list patch update watch", ("batch",), "jobs"),
        rule("update", ("batch",), "cronjobs/status"),
        rule("update", ("batch",), "cronjobs/finalizers"),
        rule("delete list", CORE, "pods"),
        rule("create patch update", EVENTS, "events"),
    ],
    "daemon-set-controller": [
        rule(READ, ("apps", "extensions"), "daemonsets"),
        rule("update", ("apps", "extensions"), "daemonsets/status"),
        rule("update", ("apps", "extensions"), "daemonsets/finalizers"),
        rule("list watch", CORE, "nodes"),
        rule("create delete list patch watch", CORE, "pods"),
        rule("create", CORE, "pods/binding"),
        rule("create delete get list patch update watch", APPS, "controllerrevisions"),
        rule("create patch update", EVENTS, "events"),
    ],
    "deployment-controller": [
        rule("get list update watch", ("apps", "extensions"), "deployments"),
        rule("update", ("apps", "extensions"), "deployments/status"),
        rule("update", ("apps", "extensions"), "deployments/finalizers"),
        rule("create delete get list patch update watch", ("apps", "extensions"), "replicasets"),
        rule("get list update watch", CORE, "pods"),
        rule("create patch update", EVENTS, "events"),
    ],
    "disruption-controller": [
        rule(READ, ("apps", "extensions"), "deployments"),
        rule(READ, ("apps", "extensions"), "replicasets"),
        rule(READ, CORE, "replicationcontrollers"),
        rule(READ, ("policy",), "poddisruptionbudgets"),
        rule(READ, APPS, "statefulsets"),
        rule("update", ("policy",), "poddisruptionbudgets/status"),
        rule("get", ("*",), "*/scale"),
        rule("create patch update", EVENTS, "events"),
        rule("patch update", CORE, "pods/status"),
    ],
    "endpoint-controller": [
        rule(READ, CORE, "pods services"),
        rule("create delete get list update", CORE, "endpoints"),
        rule("create", CORE, "endpoints/restricted"),
        rule("create patch update", EVENTS, "events"),
    ],
    "endpointslice-controller": [
        rule(READ, CORE, "nodes pods services"),
        rule("update", CORE, "services/finalizers"),
        rule("create delete get list update", ("discovery.k8s.io",), "endpointslices"),
        rule("create patch update", EVENTS, "events"),
    ],
    "endpointslicemirroring-controller": [
        rule(READ, CORE, "endpoints services"),
        rule("update", CORE, "services/finalizers"),
        rule("update", CORE, "endpoints/finalizers"),
        rule("create delete get list update", ("discovery.k8s.io",), "endpointslices"),
        rule("create patch update", EVENTS, "events"),
    ],
    "ephemeral-volume-controller": [
        rule(READ, CORE, "pods"),
        rule("update", CORE, "pods/finalizers"),
        rule("create get list watch", CORE, "persistentvolumeclaims"),
        rule("create patch update", EVENTS, "events"),
    ],
    "expand-controller": [
        rule("get list patch update watch", CORE, "persistentvolumes"),
        rule("patch update", CORE, "persistentvolumeclaims/status"),
        rule(READ, CORE, "persistentvolumeclaims"),
        rule(READ, ("storage.k8s.io",), "storageclasses"),
        rule("get", CORE, "endpoints services"),
        rule("get", CORE, "secrets"),
        rule("create patch update", EVENTS, "events"),
    ],
    "generic-garbage-collector": [
        rule("delete get list patch update watch", ("*",), "*"),
        rule("create patch update", EVENTS, "events"),
    ],
    "horizontal-pod-autoscaler": [
        rule(READ, ("autoscaling",), "horizontalpodautoscalers"),
        rule("update", ("autoscaling",), "horizontalpodautoscalers/status"),
        rule("get update", ("*",), "*/scale"),
        rule("list", CORE, "pods"),
        rule("list", ("metrics.k8s.io",), "pods"),
        rule("get list", ("custom.metrics.k8s.io",), "*"),
        rule("get list", ("external.metrics.k8s.io",), "*"),
        rule("create patch update", EVENTS, "events"),
    ],
    "job-controller": [
        rule("get list patch update watch", ("batch",), "jobs"),
        rule("update", ("batch",), "jobs/status"),
        rule("update", ("batch",), "jobs/finalizers"),
        rule("create delete list patch watch", CORE, "pods"),
        rule("create patch update", EVENTS, "events"),
    ],
    "namespace-controller": [
        rule("delete get list watch", CORE, "namespaces"),
        rule("update", CORE, "namespaces/finalize namespaces/status"),
        rule("delete deletecollection get list", ("*",), "*"),
    ],
    "node-controller": [
        rule("delete get list patch update", CORE, "nodes"),
        rule("patch update", CORE, "nodes/status"),
        rule("patch update", CORE, "pods/status"),
        rule("delete list", CORE, "pods"),
        rule("create get list update", ("networking.k8s.io",), "clustercidrs"),
        rule("create patch update", EVENTS, "events"),
        rule("get", CORE, "pods"),
    ],
    "persistent-volume-binder": [
        rule("create delete get list update watch", CORE, "persistentvolumes"),
        rule("update", CORE, "persistentvolumes/status"),
        rule("get list update watch", CORE, "persistentvolumeclaims"),
        rule("update", CORE, "persistentvolumeclaims/status"),
        rule("create delete get list watch", CORE, "pods"),
        rule(READ, ("storage.k8s.io",), "storageclasses"),
        rule("create delete get update", CORE, "endpoints"),
        rule("create delete get", CORE, "services"),
        rule("get", CORE, "secrets"),
        rule("get list", CORE, "nodes"),
        rule("watch", CORE, "events"),
        rule("create patch update", EVENTS, "events"),
    ],
    "pod-garbage-collector": [
        rule("delete list watch", CORE, "pods"),
        rule("get list", CORE, "nodes"),
        rule("patch", CORE, "pods/status"),
    ],
    "pv-protection-controller": [
        rule("get list update watch", CORE, "persistentvolumes"),
        rule("create patch update", EVENTS, "events"),
    ],
    "pvc-protection-controller": [
        rule("get list update watch", CORE, "persistentvolumeclaims"),
        rule(READ, CORE, "pods"),
        rule("create patch update", EVENTS, "events"),
    ],
    "replicaset-controller": [
        rule("get list update watch", ("apps", "extensions"), "replicasets"),
        rule("update", ("apps", "extensions"), "replicasets/status"),
        rule("update", ("apps", "extensions"), "replicasets/finalizers"),
        rule("create delete list patch watch", CORE, "pods"),
        rule("create patch update", EVENTS, "events"),
    ],
    "replication-controller": [
        rule("get list update watch", CORE, "replicationcontrollers"),
        rule("update", CORE, "replicationcontrollers/status"),
        rule("update", CORE, "replicationcontrollers/finalizers"),
        rule("create delete list patch watch", CORE, "pods"),
        rule("create patch update", EVENTS, "events"),
    ],
    "resourcequota-controller": [
        rule("list watch", ("*",), "*"),
        rule("update", CORE, "resourcequotas/status"),
        rule("create patch update", EVENTS, "events"),
    ],
    "root-ca-cert-publisher": [
        rule("create update", CORE, "configmaps"),
        rule("create patch update", EVENTS, "events"),
    ],
    "route-controller": [
        rule("list watch", CORE, "nodes"),
        rule("patch", CORE, "nodes/status"),
        rule("create patch update", EVENTS, "events"),
    ],
    "service-account-controller": [
        rule("create", CORE, "serviceaccounts"),
        rule("create patch update", EVENTS, "events"),
    ],
    "service-controller": [
        rule(READ, CORE, "services"),
        rule("patch update", CORE, "services/status"),
        rule("list watch", CORE, "nodes"),
        rule("create patch update", EVENTS, "events"),
    ],
    "statefulset-controller": [
        rule("list watch", CORE, "pods"),
        rule(READ, APPS, "statefulsets"),
        rule("update", APPS, "statefulsets/status"),
        rule("update", APPS, "statefulsets/finalizers"),
        rule("create delete get patch update", CORE, "pods"),
        rule("create delete get list patch update watch", APPS, "controllerrevisions"),
        rule("create get", CORE, "persistentvolumeclaims"),
        rule("create patch update", EVENTS, "events"),
        rule("delete update", CORE, "persistentvolumeclaims"),
    ],
    "ttl-after-finished-controller": [
        rule("delete get list watch", ("batch",), "jobs"),
        rule("create patch update", EVENTS, "events"),
    ],
    "ttl-controller": [
        rule("list patch update watch", CORE, "nodes"),
        rule("create patch update", EVENTS, "events"),
    ],
}

CONTROLLER_ROLES: list[Obj] = [cluster_role(PREFIX + name, rules) for name, rules in CONTROLLERS.items()]
CONTROLLER_ROLE_BINDINGS: list[Obj] = [
    cluster_binding(PREFIX + name, [("ServiceAccount", f"{NAMESPACE}/{name}")]) for name in CONTROLLERS]

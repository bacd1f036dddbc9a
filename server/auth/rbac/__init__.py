"""RBAC, as kube-apiserver evaluates it: Roles, ClusterRoles and their bindings decide what a user may do.

- rules.py: a PolicyRule and whether it allows a request (kube's RuleAllows), as a compiled value.
- index.py: the four kinds held in memory, bindings indexed by subject, kept current by cache.py (informers).
- authorizer.py: RbacAuthorizer, the Authorizer protocol over the index (authorize, rules_for).
- covers.py and escalation.py: escalation prevention on writes of the four kinds (admission).
- policy.py and reconcile.py: kube's bootstrap policy and its reconciliation at start.
- aggregation.py: the ClusterRole aggregation controller.
- start.py: `start_rbac(core)`, which the core's start calls.

This package imports nothing of the core at import time, so server/kinds/rbac.py can take its admission from
escalation.py.
"""

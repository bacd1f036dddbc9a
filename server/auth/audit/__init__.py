"""Audit, as kube-apiserver records it: a policy (policy.py) decides per request at which level it is recorded,
the guard (server/auth/guard.py) reports each stage of the request to an Auditor (auditor.py), which turns it
into audit.k8s.io/v1 Events (event.py) written as JSON lines by the log backend (backend.py).

No --audit-policy-file means no audit at all (kube's WithAudit without a policy), and then the guard's only
audit cost is one `is None` test per request.
"""

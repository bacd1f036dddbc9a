"""The auditor the SecurityConfig asks for, built once when the core starts: none without --audit-policy-file
(kube audits nothing without a policy) or without --audit-log-path (kube's log backend is off then)."""

from __future__ import annotations

from server.auth.audit.auditor import Auditor
from server.auth.audit.backend import LogBackend
from server.auth.audit.policy import load
from server.auth.config import SecurityConfig
from server.registry.resources import Registry


def start_audit(config: SecurityConfig, registry: Registry) -> Auditor | None:
    """Raises policy.PolicyError for a policy file kube would refuse."""
    if config.audit_policy_file is None:
        return None
    policy = load(config.audit_policy_file)  # checked even without a log path, as kube loads it first
    if not config.audit_log_path:
        return None
    backend = LogBackend(config.audit_log_path, maxsize_mb=config.audit_log_maxsize,
                         maxbackup=config.audit_log_maxbackup, shared=config.audit_log_shared)
    return Auditor(policy, backend, registry)

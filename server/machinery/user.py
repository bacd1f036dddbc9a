"""Who a request runs as: kube's user.Info, a frozen value shared by authenticators, authorizers and audit."""

from __future__ import annotations

from dataclasses import dataclass

ANONYMOUS = "system:anonymous"
UNAUTHENTICATED = "system:unauthenticated"
AUTHENTICATED = "system:authenticated"
MASTERS = "system:masters"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
SERVICE_ACCOUNTS = "system:serviceaccounts"

# Extra values are kube's map[string][]string, kept ordered so the value is hashable and compares by content.
Extra = tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True, slots=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Extra = ()

    def extra_dict(self) -> dict[str, list[str]]:
        return {key: list(values) for key, values in self.extra}

    def to_json(self) -> dict[str, object]:
        """authentication.k8s.io/v1 UserInfo (reviews, audit): username, uid, groups, extra, each left out when
        empty, as Go's omitempty prints them."""
        out: dict[str, object] = {}
        if self.name:
            out["username"] = self.name
        if self.uid:
            out["uid"] = self.uid
        if self.groups:
            out["groups"] = list(self.groups)
        if self.extra:
            out["extra"] = self.extra_dict()
        return out

    def with_authenticated(self) -> UserInfo:
        """Every authenticated user is also in system:authenticated (kube's AuthenticatedGroupAdder); anonymous
        is not."""
        if self.name == ANONYMOUS or AUTHENTICATED in self.groups:
            return self
        return UserInfo(self.name, self.uid, (*self.groups, AUTHENTICATED), self.extra)


# What the server's own controllers run as when they call the core directly (kube's loopback client).
SYSTEM = UserInfo("system:apiserver", groups=(MASTERS, AUTHENTICATED))

# `capstan serve --insecure`: every request is this user, as kube's old insecure port did.
UNSECURED = UserInfo("system:unsecured", groups=(MASTERS, AUTHENTICATED))

ANONYMOUS_USER = UserInfo(ANONYMOUS, groups=(UNAUTHENTICATED,))


def service_account_username(namespace: str, name: str) -> str:
    return f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"


def service_account_groups(namespace: str) -> tuple[str, ...]:
    return (SERVICE_ACCOUNTS, f"{SERVICE_ACCOUNTS}:{namespace}")

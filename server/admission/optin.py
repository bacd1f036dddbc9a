"""Three of kube-apiserver 1.28's admission plugins that are off by default, run when `--enable-admission-plugins`
names them, as hardened clusters and tests turn them on:

- AlwaysPullImages (plugin/pkg/admission/alwayspullimages): every container of a new Pod, or of a Pod updated
  with an image it did not have, pulls its image always (imagePullPolicy Always), so a node's cached image is
  never used without the registry's credentials. Its validation refuses a policy a later mutation set otherwise,
  as kube does: a 500 whose message lists kube's Forbidden errors.
- DenyServiceExternalIPs (plugin/pkg/admission/network/denyserviceexternalips): a Service may not gain
  externalIPs (403 `Use of external IPs is denied by admission control`); keeping or dropping those it has is
  allowed.
- AlwaysDeny (plugin/pkg/admission/deny): every write a client makes is refused (403 `admission control is
  denying all modifications`). The core's own writes (its bootstrap objects, its controllers, as
  system:apiserver) pass, so that a server with it still starts, where kube-apiserver's post-start hooks would
  fail against it and it would never be ready.
"""

from __future__ import annotations

from server.admission import Plugin
from server.auth import caller
from server.kinds.podspec import CONTAINER_LISTS
from server.machinery import errors
from server.machinery.user import SYSTEM
from server.machinery.values import Obj
from server.objects.admitting import Attributes
from server.objects.context import Context

ALWAYS_PULL_IMAGES, DENY_EXTERNAL_IPS, ALWAYS_DENY = "AlwaysPullImages", "DenyServiceExternalIPs", "AlwaysDeny"
NAMES = frozenset((ALWAYS_PULL_IMAGES, DENY_EXTERNAL_IPS, ALWAYS_DENY))
_PODS = frozenset({("", "pods")})
_SERVICES = frozenset({("", "services")})


def _forbidden(attrs: Attributes, why: str) -> errors.ApiError:
    return errors.forbidden(attrs.resource.resource, attrs.resource.group, attrs.name, why)


def _containers(pod: Obj) -> list[tuple[str, Obj]]:
    """Every container with its field path, init containers first (VisitContainersWithPath)."""
    spec = pod.get("spec") or {}
    return [(f"spec.{field}[{i}]", c) for field in CONTAINER_LISTS
            for i, c in enumerate(spec.get(field) or []) if isinstance(c, dict)]


def _pulls(attrs: Attributes) -> bool:
    """Whether AlwaysPullImages judges the write: a Pod itself, created or updated with an image it lacked."""
    if attrs.subresource or attrs.kind is not None or attrs.obj is None:
        return False
    if attrs.operation != "UPDATE" or attrs.old is None:
        return True
    before = {c.get("image") for _, c in _containers(attrs.old)}
    return any(c.get("image") not in before for _, c in _containers(attrs.obj))


async def always_pull(ctx: Context, attrs: Attributes) -> None:
    if _pulls(attrs):
        assert attrs.obj is not None
        for _, container in _containers(attrs.obj):
            container["imagePullPolicy"] = "Always"


async def always_pulled(ctx: Context, attrs: Attributes) -> None:
    if not _pulls(attrs):
        return
    assert attrs.obj is not None
    refused = [f'{_forbidden(attrs, "").status.message}{path}.imagePullPolicy: Unsupported value: '
               f'"{c.get("imagePullPolicy", "")}": supported values: "Always"'
               for path, c in _containers(attrs.obj) if c.get("imagePullPolicy") != "Always"]
    if refused:  # an aggregate of errors, which kube answers as an unclassified 500
        message = refused[0] if len(refused) == 1 else f"[{', '.join(refused)}]"
        raise errors.ApiError(errors.status(500, "", message, with_details=False))


async def deny_external_ips(ctx: Context, attrs: Attributes) -> None:
    if attrs.subresource or attrs.kind is not None or attrs.obj is None:
        return
    wanted = (attrs.obj.get("spec") or {}).get("externalIPs") or []
    had = set(((attrs.old or {}).get("spec") or {}).get("externalIPs") or [])
    if wanted and (attrs.old is None or any(ip not in had for ip in wanted)):
        raise _forbidden(attrs, "Use of external IPs is denied by admission control")


async def deny(ctx: Context, attrs: Attributes) -> None:
    if caller.current().user is not SYSTEM:
        raise _forbidden(attrs, "admission control is denying all modifications")


def plugins(on: frozenset[str]) -> list[Plugin]:
    """The plugins among these three that `on` names."""
    made = (
        Plugin(ALWAYS_PULL_IMAGES, frozenset(("CREATE", "UPDATE")), always_pull, always_pulled, resources=_PODS),
        Plugin(DENY_EXTERNAL_IPS, frozenset(("CREATE", "UPDATE")), validate=deny_external_ips, resources=_SERVICES),
        Plugin(ALWAYS_DENY, frozenset(("CREATE", "UPDATE", "DELETE", "CONNECT")), deny, deny),
    )
    return [p for p in made if p.name in on]

"""Service accounts: their tokens (issued through serviceaccounts/token, verified on every request) and the
issuer's discovery documents. (The controllers that give every namespace its `default` ServiceAccount and its
`kube-root-ca.crt` ConfigMap are kube-controller-manager's: server/controllers/, started by server/startup/app.py.)

start_service_accounts is the one constructor start_security calls; what it starts depends on the configuration:
- a signing key: serviceaccounts/token is served (the ServiceAccount resource is registered again with it)
  and tokens are issued with it; without one, POST .../token is 404 as on a kube-apiserver without an issuer;
- verification keys (the signing key's public half always among them): the authenticator, the documents and
  the informers its lookups read.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import logging
from dataclasses import dataclass

import orjson

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth.config import SecurityConfig
from server.auth.serviceaccounts import keys, legacy, oidc, tokenrequest
from server.auth.serviceaccounts.authenticator import ServiceAccountAuthenticator
from server.auth.serviceaccounts.index import Entry, entry_of
from server.auth.serviceaccounts.issuer import TokenIssuer
from server.machinery import errors
from server.objects.core import Core
from server.registry.resources import Handlers
from server.runtime.informer import Informer

log = logging.getLogger(__name__)

WATCHED = ("serviceaccounts", "pods", "secrets")
LOOPBACK_MANAGER = "kube-apiserver"  # the field manager of kube-apiserver's own writes (its loopback client's)
MARKING_LIMIT = 1024  # Secrets labelled at once; more wait for a later use


class Lookups:
    """Identity of ServiceAccounts, Pods and Secrets from informers caching only that, a miss read from the
    core; and the last-used label of secret-based tokens, written as kube-apiserver writes it."""

    def __init__(self, core: Core) -> None:
        self._core = core
        self._marking: dict[tuple[str, str], str] = {}  # Secrets being labelled, with the day they are given
        self._tasks: set[asyncio.Task[None]] = set()
        self.informers = {resource: Informer(core, core_pb2.ResourcePath(version="v1", resource=resource),
                                             transform=entry_of) for resource in WATCHED}

    async def start(self) -> None:
        for informer in self.informers.values():
            await informer.start()

    async def stop(self) -> None:
        for informer in self.informers.values():
            await informer.stop()
        for task in list(self._tasks):
            task.cancel()

    def mark_used(self, namespace: str, secret: str) -> None:
        """Label the Secret `kubernetes.io/legacy-token-last-used: <today, UTC>` with a merge patch, as kube's
        legacy validator does, once at a time per Secret and day; the request that used the token does not
        wait for it, and a failure is logged (the next use tries again)."""
        day = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
        key = (namespace, secret)
        if self._marking.get(key) == day or len(self._marking) >= MARKING_LIMIT:
            return
        self._marking[key] = day
        task = asyncio.get_running_loop().create_task(self._mark(namespace, secret, day))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _mark(self, namespace: str, secret: str, day: str) -> None:
        patch = {"kind": "Secret", "apiVersion": "v1", "metadata": {
            "name": secret, "namespace": namespace, "labels": {legacy.LAST_USED_LABEL: day}}}
        request = core_pb2.PatchRequest(
            path=core_pb2.ResourcePath(version="v1", resource="secrets", namespace=namespace, name=secret),
            type=core_pb2.PATCH_TYPE_MERGE, patch=orjson.dumps(patch))
        request.options.fieldManager = LOOPBACK_MANAGER
        try:
            await self._core.patch(request)
        except errors.ApiError as err:
            log.warning("labelling legacy service account token secret %s/%s as used: %s", namespace, secret,
                        err.status.message)
        finally:
            self._marking.pop((namespace, secret), None)

    def peek(self, resource: str, namespace: str, name: str) -> Entry | None:
        """The object's identity as the informer holds it now; None when it holds none."""
        return self.informers[resource].cache.get((namespace, name))

    async def __call__(self, resource: str, namespace: str, name: str) -> Entry | None:
        found = self.peek(resource, namespace, name)
        if found is not None:
            return found
        path = core_pb2.ResourcePath(version="v1", resource=resource, namespace=namespace, name=name)
        try:
            got = await self._core.get(core_pb2.GetRequest(path=path))
        except errors.ApiError:
            return None
        return entry_of(orjson.loads(got.object.data))


@dataclass(frozen=True, slots=True)
class ServiceAccounts:
    """What start_service_accounts started; authenticator/issuer/documents are None when no key is configured."""

    authenticator: ServiceAccountAuthenticator | None
    issuer: TokenIssuer | None
    documents: oidc.Documents | None
    lookups: Lookups | None

    async def stop(self) -> None:
        if self.lookups is not None:
            await self.lookups.stop()


async def start_service_accounts(core: Core, config: SecurityConfig) -> ServiceAccounts:
    """Raises keys.KeyFileError for an unreadable key file (the server must not start)."""
    audiences = (config.service_account_issuer,)
    signing = keys.load_signing_key(config.service_account_signing_key_file) \
        if config.service_account_signing_key_file else None
    verification = keys.load_public_keys(config.service_account_key_files)
    if signing is not None:
        own = keys.verification_key(signing.public_key())
        if own.kid not in {k.kid for k in verification}:
            verification = (own, *verification)
    issuer = None
    if signing is not None:
        issuer = TokenIssuer(issuer=config.service_account_issuer, signing_key=signing, audiences=audiences)
        served = core.registry.get("", "v1", "serviceaccounts")
        if served is not None:
            core.registry.add(dataclasses.replace(
                served, subresources=(*served.subresources, dataclasses.replace(
                    tokenrequest.TOKEN, handlers=Handlers(create=tokenrequest.handler(issuer))))))
    authenticator = documents = lookups = None
    if verification:  # the indexes serve the authenticator alone: without keys nothing reads them
        lookups = Lookups(core)
        await lookups.start()
        authenticator = ServiceAccountAuthenticator(issuer=config.service_account_issuer, keys=verification,
                                                    audiences=audiences, lookup=lookups, peek=lookups.peek,
                                                    mark_used=lookups.mark_used)
        documents = oidc.documents(config.service_account_issuer, verification)
    return ServiceAccounts(authenticator, issuer, documents, lookups)

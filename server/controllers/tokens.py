"""The service account tokens controller, as kube-controller-manager 1.28's `serviceaccount-token`
(pkg/controller/serviceaccount/tokens_controller.go): it fills the Secrets that ask for a secret-based token and
removes the ones whose ServiceAccount is gone. A singleton, elected with kube-controller-manager's other
controllers; it runs only where a service account signing key is configured (kube's is disabled without
--service-account-private-key-file).

Contracts, as kube's (1.28 generates no Secret for a ServiceAccount by itself: a user creates one):
- A `kubernetes.io/service-account-token` Secret whose `kubernetes.io/service-account.name` annotation names an
  existing ServiceAccount (and whose `kubernetes.io/service-account.uid`, if set, is that account's) is given
  what it lacks: `ca.crt` (the root CA, when one is configured and the Secret's differs), `namespace`, and a
  `token` signed for that account and Secret (server/auth/serviceaccounts/legacy.py); both annotations are set.
  The write is an update at the resourceVersion the controller saw: a Secret changed meanwhile is left to the
  change's own sync, and an existing token is never replaced.
- Such a Secret whose ServiceAccount does not exist (or has another uid) is deleted, with its uid as
  precondition; so are the token Secrets of a ServiceAccount when it is deleted.
- A token Secret deleted is taken out of its ServiceAccount's `secrets`, when listed there.
"""

from __future__ import annotations

import base64
import logging
from pathlib import Path
from typing import Any

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth.serviceaccounts import keys, legacy
from server.controllers.workload.keyed import Key, KeyedController, Obj, decode, key_of, named, path
from server.machinery import errors
from server.objects.core import Core
from server.runtime.election import Singleton
from server.runtime.informer import SharedInformers

log = logging.getLogger(__name__)

SECRETS = path("secrets")
SERVICE_ACCOUNTS = path("serviceaccounts")


def _annotations(obj: Obj) -> dict[str, Any]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def _uid(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("uid", ""))


def _decoded(data: dict[str, Any], key: str) -> bytes:
    value = data.get(key)
    if not isinstance(value, str):
        return b""
    try:
        return base64.b64decode(value, validate=True)
    except ValueError:
        return b""


class TokensController(KeyedController):
    name = "serviceaccount-token-controller"

    def __init__(self, core: Core, signing_key: keys.PrivateKey, root_ca: bytes,
                 informers: SharedInformers | None = None) -> None:
        super().__init__(core, informers)
        self._key = signing_key
        self._root_ca = root_ca
        self._gone: dict[Key, tuple[str, str]] = {}  # deleted token Secrets: their account's (name, uid)
        self.secrets = self.follow(SECRETS, self._secret_changed, field_selector=f"type={legacy.SECRET_TYPE}")
        self.accounts = self.follow(SERVICE_ACCOUNTS, self._account_changed)

    def _secret_changed(self, old: Obj | None, new: Obj | None) -> None:
        if new is not None:
            self.queue(key_of(new))
        elif old is not None:
            annotations = _annotations(old)
            key = key_of(old)
            self._gone[key] = (str(annotations.get(legacy.NAME_ANNOTATION, "")),
                               str(annotations.get(legacy.UID_ANNOTATION, "")))
            self.queue(key)

    def _account_changed(self, old: Obj | None, new: Obj | None) -> None:
        if new is not None or old is None:
            return
        namespace, name = key_of(old)
        uid = _uid(old)
        for secret in self.secrets.in_namespace(namespace):
            annotations = _annotations(secret)
            if (annotations.get(legacy.NAME_ANNOTATION) == name
                    and annotations.get(legacy.UID_ANNOTATION, "") in ("", uid)):
                self.queue(key_of(secret))

    async def sync(self, key: Key) -> None:
        secret = self.secrets.get(key)
        if secret is None:
            gone = self._gone.get(key)
            if gone is not None and gone[0]:
                await self._forget_reference(key, *gone)  # a failure keeps it for the retry
            self._gone.pop(key, None)
            return
        annotations = _annotations(secret)
        account_name = str(annotations.get(legacy.NAME_ANNOTATION, ""))
        if secret.get("type") != legacy.SECRET_TYPE or not account_name:
            return
        account = await self._account(key[0], account_name, str(annotations.get(legacy.UID_ANNOTATION, "")))
        if account is None:
            await self._delete(key, _uid(secret))
            return
        await self._populate(key, account, secret)

    async def _account(self, namespace: str, name: str, uid: str) -> Obj | None:
        """The ServiceAccount of that name (and uid, when one is given): from the cache, else from the core."""
        account = self.accounts.get((namespace, name)) or await self._read("serviceaccounts", namespace, name)
        return account if account is not None and (not uid or _uid(account) == uid) else None

    async def _read(self, resource: str, namespace: str, name: str) -> Obj | None:
        """The object as the core holds it now; None when it does not exist."""
        try:
            got = await self.core.get(core_pb2.GetRequest(path=named(path(resource, namespace), name)))
        except errors.ApiError as err:
            if err.code == 404:
                return None
            raise
        return decode(got.object)

    async def _delete(self, key: Key, uid: str) -> None:
        request = core_pb2.DeleteRequest(path=named(path("secrets", key[0]), key[1]))
        if uid:
            request.options.preconditions.uid = uid
        try:
            await self.core.delete(request)
        except errors.ApiError as err:
            if err.code not in (404, 409):
                raise

    def _needs(self, secret: Obj) -> tuple[bool, bool, bool]:
        data = secret.get("data") or {}
        needs_ca = bool(self._root_ca) and _decoded(data, legacy.CA_KEY) != self._root_ca
        return needs_ca, not _decoded(data, legacy.NAMESPACE_KEY), not _decoded(data, legacy.TOKEN_KEY)

    async def _populate(self, key: Key, account: Obj, cached: Obj) -> None:
        """generateTokenIfNeeded: fill what the Secret lacks, reading it afresh; a Secret changed since the cache
        saw it is left to that change's sync."""
        if not any(self._needs(cached)):
            return
        live = await self._read("secrets", *key)
        if live is None:
            return
        metadata = live.setdefault("metadata", {})
        if metadata.get("resourceVersion") != (cached.get("metadata") or {}).get("resourceVersion"):
            return
        needs_ca, needs_namespace, needs_token = self._needs(live)
        if not (needs_ca or needs_namespace or needs_token):
            return
        data = live.get("data") or {}
        live["data"] = data
        if needs_ca:
            data[legacy.CA_KEY] = base64.b64encode(self._root_ca).decode()
        if needs_namespace:
            data[legacy.NAMESPACE_KEY] = base64.b64encode(key[0].encode()).decode()
        account_name, account_uid = key_of(account)[1], _uid(account)
        if needs_token:
            token = legacy.token_for(self._key, namespace=key[0], account=account_name, account_uid=account_uid,
                                     secret=key[1])
            data[legacy.TOKEN_KEY] = base64.b64encode(token.encode()).decode()
        metadata["annotations"] = {**(metadata.get("annotations") or {}), legacy.NAME_ANNOTATION: account_name,
                                   legacy.UID_ANNOTATION: account_uid}
        try:
            await self.update(path("secrets", key[0]), live)
        except errors.ApiError as err:
            if err.code not in (404, 409):
                raise

    async def _forget_reference(self, key: Key, account_name: str, account_uid: str) -> None:
        """removeSecretReference: the deleted Secret out of its ServiceAccount's `secrets`, at the version read."""
        account = await self._read("serviceaccounts", key[0], account_name)
        if account is None or (account_uid and _uid(account) != account_uid):
            return
        listed = account.get("secrets") or []
        kept = [ref for ref in listed if not (isinstance(ref, dict) and ref.get("name") == key[1])]
        if len(kept) == len(listed):
            return
        account["secrets"] = kept
        try:
            await self.update(path("serviceaccounts", key[0]), account)
        except errors.ApiError as err:
            if err.code == 404:
                return
            raise  # a conflict: synced again (kube retries on conflict)


def singletons(core: Core, informers: SharedInformers | None, signing_key_file: Path | None,
               root_ca_file: Path | None) -> list[Singleton]:
    """None without a signing key (kube-controller-manager disables the controller without one). KeyFileError or
    OSError for a key or CA file that cannot be read."""
    if signing_key_file is None:
        return []
    root_ca = root_ca_file.read_bytes() if root_ca_file is not None else b""
    controller = TokensController(core, keys.load_signing_key(signing_key_file), root_ca, informers)
    return [Singleton("TokensController", controller.start, controller.stop)]

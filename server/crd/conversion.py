"""A CRD's conversion webhook (`spec.conversion.strategy: Webhook`) as the Resource.converter of its versions,
as apiextensions-apiserver's webhookConverter calls it.

Contract:
- One ConversionReview per batch of objects, in the first of the CRD's `conversionReviewVersions` Capstan
  speaks (apiextensions.k8s.io/v1, v1beta1), through the core's callout client (server/callouts) within
  kube's 30 s; objects already at the desired version are not sent.
- The answer is checked as kube checks it: its uid, `result.status` Success, one object per object sent, each
  at the desired apiVersion and the same kind; metadata other than labels and annotations comes back from
  the original (restoreObjectMeta). Any failure fails the whole batch with kube's message
  (`conversion webhook for <group>/<version>, Kind=<kind> failed: ...`) as a 500 Status, which a GET, a
  LIST and a write answer and a WATCH ends with as its ERROR event.
"""

from __future__ import annotations

import uuid
from typing import Any

import orjson

from server.callouts.client import CallError, Callouts, ClientConfig
from server.crd import definition
from server.machinery import errors
from server.machinery.values import Obj

TIMEOUT = 30.0  # seconds: kube's fixed timeout for conversion webhooks
REVIEW_VERSIONS = ("v1", "v1beta1")  # the ConversionReview versions Capstan speaks, as kube-apiserver 1.28


class WebhookConverter:
    """The conversion of one CRD (as it was when its versions were registered)."""

    def __init__(self, callouts: Callouts, crd: Obj) -> None:
        spec = definition.spec(crd)
        webhook = (spec.get("conversion") or {}).get("webhook") or {}
        self._callouts = callouts
        self._config = ClientConfig.from_json(webhook.get("clientConfig") or {})
        offered = [str(v) for v in webhook.get("conversionReviewVersions") or []]
        self._review = next((v for v in offered if v in REVIEW_VERSIONS), "")
        self._offered = offered
        self._group = str(spec.get("group") or "")
        self._storage = definition.storage_version(crd)
        stored = (crd.get("status") or {}).get("storedVersions") or []
        self._stored = tuple(dict.fromkeys([*(str(v) for v in stored), self._storage]))

    @property
    def storage_version(self) -> str:
        return self._storage

    @property
    def stored_versions(self) -> tuple[str, ...]:
        return self._stored

    async def convert(self, objs: list[Obj], api_version: str) -> list[Obj]:
        out = list(objs)
        todo = [i for i, obj in enumerate(objs) if obj.get("apiVersion") != api_version]
        if not todo:
            return out
        first = objs[todo[0]]
        shown = _gvk(str(first.get("apiVersion") or ""), str(first.get("kind") or ""))
        converted = await self._call([objs[i] for i in todo], api_version, shown)
        for n, (i, obj) in enumerate(zip(todo, converted, strict=True)):
            original = objs[i]
            if not isinstance(obj, dict):
                raise _failure(f"conversion webhook for {shown} returned invalid converted object at index {n}: "
                               "expected an object")
            if obj.get("apiVersion") != api_version:
                raise _failure(f"conversion webhook for {shown} returned invalid converted object at index {n}: "
                               f"invalid groupVersion (expected {api_version}, received {obj.get('apiVersion')})")
            if obj.get("kind") != original.get("kind"):
                raise _failure(f"conversion webhook for {shown} returned invalid converted object at index {n}: "
                               f"invalid kind (expected {original.get('kind')}, received {obj.get('kind')})")
            out[i] = _restore_meta(original, obj)
        return out

    async def _call(self, objs: list[Obj], api_version: str, shown: str) -> list[Any]:
        if not self._review:
            raise _failure(f"conversion webhook for {shown} failed: webhook does not accept known "
                           f"ConversionReview versions (v1, v1beta1), accepts {self._offered}")
        uid = str(uuid.uuid4())
        review = {"kind": "ConversionReview", "apiVersion": f"apiextensions.k8s.io/{self._review}",
                  "request": {"uid": uid, "desiredAPIVersion": api_version, "objects": objs}}
        try:
            code, body = await self._callouts.post(self._config, orjson.dumps(review), TIMEOUT)
        except CallError as err:
            raise _failure(f"conversion webhook for {shown} failed: {err}") from None
        if code >= 300:
            raise _failure(f"conversion webhook for {shown} failed: an error on the server "
                           f"({body[:200].decode('utf-8', 'replace')}) has prevented the request from succeeding")
        try:
            answer = orjson.loads(body)
        except orjson.JSONDecodeError as err:
            raise _failure(f"conversion webhook for {shown} failed: {err}") from None
        response = answer.get("response") if isinstance(answer, dict) else None
        if not isinstance(response, dict):
            raise _failure(f"conversion webhook for {shown} returned invalid response: no response provided")
        if self._review == "v1" and (answer.get("apiVersion"), answer.get("kind")) != (
                "apiextensions.k8s.io/v1", "ConversionReview"):
            raise _failure(f"conversion webhook for {shown} returned invalid response: expected webhook response "
                           f"of apiextensions.k8s.io/v1, Kind=ConversionReview, got "
                           f"{_gvk(str(answer.get('apiVersion') or ''), str(answer.get('kind') or ''))}")
        if response.get("uid") != uid:
            raise _failure(f"conversion webhook for {shown} returned invalid response: expected response.uid="
                           f'"{uid}", got "{response.get("uid") or ""}"')
        result = response.get("result") or {}
        if result.get("status") != "Success":
            message = result.get("message") or f"response.result.status was '{result.get('status') or ''}', " \
                                                "not 'Success'"
            raise _failure(f"conversion webhook for {shown} returned failure: {message}")
        converted = response.get("convertedObjects") or []
        if len(converted) != len(objs):
            raise _failure(f"conversion webhook for {shown} returned {len(converted)} objects, expected {len(objs)}")
        return list(converted)


def _gvk(api_version: str, kind: str) -> str:
    """A GroupVersionKind as Go prints it: `group/version, Kind=Kind`."""
    return f"{api_version}, Kind={kind}"


def _failure(message: str) -> errors.ApiError:
    """A conversion failure: a plain error in kube-apiserver, so a 500 Status with no reason."""
    return errors.ApiError(errors.status(500, "", message))


def _restore_meta(original: Obj, converted: Obj) -> Obj:
    """restoreObjectMeta: the converted object keeps the original's metadata but for labels and annotations."""
    meta = dict(original.get("metadata") or {})
    new_meta = converted.get("metadata") or {}
    for field in ("labels", "annotations"):
        if new_meta.get(field):
            meta[field] = new_meta[field]
        else:
            meta.pop(field, None)
    return {**converted, "metadata": meta}

"""kube-apiserver's EncryptionConfiguration (apiserver.config.k8s.io/v1), read and validated as kube does.

The file given to `--encryption-provider-config` is YAML or JSON:

    apiVersion: apiserver.config.k8s.io/v1
    kind: EncryptionConfiguration
    resources:
      - resources: [secrets, configmaps, "*.apps", widgets.example.com]
        providers:
          - aesgcm: {keys: [{name: key1, secret: <base64 of 16, 24 or 32 bytes>}]}
          - identity: {}
      - resources: ["*.*"]
        providers:
          - kms: {apiVersion: v2, name: vault, endpoint: unix:///run/kms.sock, timeout: 3s}

Validation is kube's (k8s.io/apiserver/pkg/apis/config/validation), with its messages, reported as kube's
field errors (`resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: "REDACTED": ...`).
A resource is `resource` (core group), `resource.group`, `*.` (every core resource), `*.group` or `*.*`.
KMS providers are API v2 only: KMS v1 is deprecated in kube 1.28, and Capstan does not speak it.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from typing import Any

import yaml

API_VERSION = "apiserver.config.k8s.io/v1"
KIND = "EncryptionConfiguration"
AES_KEY_SIZES = (16, 24, 32)
SECRETBOX_KEY_SIZES = (32,)
DEFAULT_KMS_TIMEOUT = 3.0  # kube's default KMSConfiguration.timeout

_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class ConfigError(Exception):
    """The file cannot be read or does not validate; the message lists kube's field errors."""


@dataclass(frozen=True, slots=True)
class Key:
    name: str
    secret: bytes


@dataclass(frozen=True, slots=True)
class KmsConfig:
    name: str
    endpoint: str  # unix:///path
    timeout: float  # seconds


@dataclass(frozen=True, slots=True)
class Provider:
    """One entry of a providers list: `kind` is identity, aescbc, aesgcm, secretbox or kms."""

    kind: str
    keys: tuple[Key, ...] = ()
    kms: KmsConfig | None = None


@dataclass(frozen=True, slots=True)
class GroupResource:
    """A parsed resources entry: kube's schema.ParseGroupResource ("*" stands for any)."""

    group: str
    resource: str


@dataclass(frozen=True, slots=True)
class ResourceConfig:
    resources: tuple[GroupResource, ...]
    providers: tuple[Provider, ...]


@dataclass(frozen=True, slots=True)
class EncryptionConfig:
    resources: tuple[ResourceConfig, ...]


def parse_group_resource(text: str) -> GroupResource:
    resource, _, group = text.partition(".")
    return GroupResource(group, resource)


def parse_duration(text: str) -> float:
    """Go's time.ParseDuration for what a timeout holds ("3s", "1m30s", "500ms")."""
    pos, total = 0, 0.0
    while pos < len(text):
        match = _DURATION.match(text, pos)
        if match is None:
            raise ValueError(f'time: invalid duration "{text}"')
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if not text:
        raise ValueError('time: invalid duration ""')
    return total


def load(data: bytes) -> EncryptionConfig:
    """Parse and validate a file's bytes; ConfigError with every problem found."""
    try:
        document = json.loads(data) if data.lstrip().startswith(b"{") else yaml.safe_load(data)
    except (ValueError, yaml.YAMLError) as err:
        raise ConfigError(f"error decoding encryption provider configuration file: {err}") from None
    if not isinstance(document, dict):
        raise ConfigError("error decoding encryption provider configuration file: not an object")
    if document.get("kind") != KIND or document.get("apiVersion") != API_VERSION:
        raise ConfigError(f"got unexpected config type: {document.get('apiVersion')}, Kind={document.get('kind')}"
                          f" (want {API_VERSION}, Kind={KIND})")
    return _validate(document)


def _validate(document: dict[str, Any]) -> EncryptionConfig:
    errors: list[str] = []
    entries = document.get("resources") or []
    if not isinstance(entries, list) or not entries:
        raise ConfigError("resources: Required value: at least one resources is required")
    kms_names: set[str] = set()
    out: list[ResourceConfig] = []
    for i, entry in enumerate(entries):
        entry = entry if isinstance(entry, dict) else {}
        where = f"resources[{i}]"
        names = [str(name) for name in entry.get("resources") or []]
        if not names:
            errors.append(f"{where}.resources: Required value: at least one {where}.resources is required")
        errors.extend(_resource_errors(names, f"{where}.resources"))
        providers: list[Provider] = []
        listed = entry.get("providers") or []
        if not listed:
            errors.append(f"{where}.providers: Required value: at least one {where}.providers is required")
        for j, item in enumerate(listed):
            provider = _provider(item if isinstance(item, dict) else {}, f"{where}.providers[{j}]", kms_names, errors)
            if provider is not None:
                providers.append(provider)
        out.append(ResourceConfig(tuple(parse_group_resource(name) for name in names), tuple(providers)))
    if errors:
        raise ConfigError("error validating encryption provider configuration: " + ", ".join(errors))
    return EncryptionConfig(tuple(out))


def _resource_errors(names: list[str], where: str) -> list[str]:
    errors: list[str] = []
    parsed = [parse_group_resource(name) for name in names]
    duplicate = overlap = False
    for i, one in enumerate(parsed):
        for j, other in enumerate(parsed):
            if i == j:
                continue
            if one == other:
                duplicate = True
                continue
            if one == GroupResource("*", "*") or (one.group == other.group and "*" in (one.resource, other.resource)):
                overlap = True
    shown = json.dumps(names)
    if duplicate:
        errors.append(f"{where}: Invalid value: {shown}: the same resource cannot be specified multiple times")
    if overlap:
        errors.append(f"{where}: Invalid value: {shown}: using overlapping resources such as 'secrets' and '*.' in"
                      " the same resource list is not allowed as they will be masked")
    for j, name in enumerate(names):
        gr = parsed[j]
        problem = None
        if name.lower() != name:
            problem = "resource name should not contain capital letters"
        elif name == "*":
            problem = "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources"
        elif name in ("apiserveripinfo", "serviceipallocations", "servicenodeportallocations"):
            problem = "resources which do not have REST API/s cannot be encrypted"
        elif gr.group == "events.k8s.io":
            problem = ("'*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events'"
                       " instead in the config file")
        elif gr.group == "extensions":
            problem = "'extensions' group has been removed and cannot be used for encryption"
        elif gr.group == "*" and gr.resource != "*":
            problem = "encrypting the same resource across groups is not supported"
        if problem:
            errors.append(f'{where}[{j}]: Invalid value: "{name}": {problem}')
    return errors


def _provider(item: dict[str, Any], where: str, kms_names: set[str], errors: list[str]) -> Provider | None:
    kinds = [kind for kind in ("kms", "aesgcm", "aescbc", "secretbox", "identity") if item.get(kind) is not None]
    if not kinds:
        errors.append(f"{where}: Invalid value: {json.dumps(item)}: provider does not contain any of the expected"
                      " providers: KMS, AESGCM, AESCBC, Secretbox, Identity")
        return None
    if len(kinds) > 1:
        errors.append(f"{where}: Invalid value: {json.dumps(item)}: more than one provider specified in a single"
                      " element, should split into different list elements")
        return None
    kind = kinds[0]
    body = item[kind] if isinstance(item[kind], dict) else {}
    if kind == "identity":
        return Provider("identity")
    if kind == "kms":
        kms = _kms(body, f"{where}.kms", kms_names, errors)
        return Provider("kms", kms=kms) if kms is not None else None
    sizes = SECRETBOX_KEY_SIZES if kind == "secretbox" else AES_KEY_SIZES
    keys = _keys(body.get("keys") or [], f"{where}.{kind}.keys", sizes, errors)
    return Provider(kind, keys=keys)


def _keys(items: list[Any], where: str, sizes: tuple[int, ...], errors: list[str]) -> tuple[Key, ...]:
    if not items:
        errors.append(f"{where}: Required value: at least one keys is required")
        return ()
    keys: list[Key] = []
    for i, item in enumerate(items):
        item = item if isinstance(item, dict) else {}
        name, text = str(item.get("name") or ""), str(item.get("secret") or "")
        if not name:
            errors.append(f"{where}[{i}].name: Required value: name is a mandatory field for a key")
        if not text:
            errors.append(f"{where}[{i}].secret: Required value: secret is a mandatory field for a key")
            continue
        try:
            secret = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            errors.append(f'{where}[{i}].secret: Invalid value: "REDACTED": secrets must be base64 encoded')
            continue
        if len(secret) not in sizes:
            errors.append(f'{where}[{i}].secret: Invalid value: "REDACTED": secret is not of the expected length,'
                          f" got {len(secret)}, expected one of [{' '.join(map(str, sizes))}]")
            continue
        keys.append(Key(name, secret))
    return tuple(keys)


def _kms(body: dict[str, Any], where: str, names: set[str], errors: list[str]) -> KmsConfig | None:
    before = len(errors)
    name = str(body.get("name") or "")
    version = str(body.get("apiVersion") or "v1")  # kube defaults an empty apiVersion to v1
    endpoint = str(body.get("endpoint") or "")
    if not name:
        errors.append(f"{where}.name: Required value: name is a mandatory field for a provider")
    if ":" in name:
        errors.append(f'{where}.name: Invalid value: "{name}": invalid KMS provider name {name}, must not contain'
                      " ':'")
    if name and name in names:
        errors.append(f'{where}.name: Invalid value: "{name}": duplicate KMS provider name {name}, names must be'
                      " unique")
    names.add(name)
    try:
        timeout = parse_duration(str(body["timeout"])) if body.get("timeout") is not None else DEFAULT_KMS_TIMEOUT
    except ValueError as err:
        errors.append(f"{where}.timeout: Invalid value: {json.dumps(body.get('timeout'))}: {err}")
        timeout = DEFAULT_KMS_TIMEOUT
    if timeout <= 0:
        errors.append(f"{where}.timeout: Invalid value: {json.dumps(body.get('timeout'))}: timeout should be a"
                      " positive value")
    if not endpoint:
        errors.append(f'{where}.endpoint: Invalid value: "": endpoint is a mandatory field for a kms')
    elif not endpoint.startswith("unix://"):
        scheme = endpoint.partition("://")[0] if "://" in endpoint else ""
        errors.append(f'{where}.endpoint: Invalid value: "{endpoint}": unsupported scheme "{scheme}" for KMS'
                      " provider, only unix is supported")
    if body.get("cachesize") is not None and version != "v1":
        errors.append(f"{where}.cachesize: Invalid value: {body['cachesize']}: cachesize is not supported in v2")
    if version not in ("v1", "v2"):
        errors.append(f'{where}.apiVersion: Invalid value: "{version}": unsupported apiVersion apiVersion for KMS'
                      " provider, only v1 and v2 are supported")
    elif version == "v1":
        errors.append(f'{where}.apiVersion: Invalid value: "v1": KMS v1 is deprecated in kube 1.28 and not served'
                      " by Capstan: use apiVersion v2")
    if len(errors) > before:
        return None
    return KmsConfig(name, endpoint, timeout)

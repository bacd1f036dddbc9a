"""kube-apiserver's `--admission-control-config-file`: the AdmissionConfiguration that hands each admission
plugin its own configuration, read as k8s.io/apiserver's ReadAdmissionConfiguration reads it.

- The file is JSON or YAML: `apiVersion: apiserver.config.k8s.io/v1` (or the older `apiserver.k8s.io/v1alpha1`),
  `kind: AdmissionConfiguration`, and `plugins`, each with a `name` and either an inline `configuration` or a
  `path` to a file holding it (relative to the directory of the AdmissionConfiguration file). Unknown fields are
  ignored, as kube's (non-strict) decoder ignores them.
- A file in the legacy unversioned format (a top-level `imagePolicy` or `podNodeSelectorPluginConfig`) is
  accepted as kube accepts it: it configures ImagePolicyWebhook and PodNodeSelector only (`legacy`).
- A file that cannot be read or decoded raises ConfigError with kube's words
  (`failed to read plugin config: ...`), and the server does not start.

config_for(name) answers what kube's ConfigProvider.ConfigFor hands a plugin: the bytes of its configuration
(an inline one as compact JSON, as kube's decoder holds it) or None. decode() is the typed-document step both
this file and a plugin's own configuration go through (runtime.Decode's texts for a missing or unknown kind).
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from server.machinery.codec import yamlread
from server.machinery.codec.gojson import json_kind

API_VERSIONS = ("apiserver.config.k8s.io/v1", "apiserver.k8s.io/v1alpha1")
KIND = "AdmissionConfiguration"
# The plugins whose configuration kube still reads from a file in the legacy unversioned format.
LEGACY_PLUGINS = ("ImagePolicyWebhook", "PodNodeSelector")
_LEGACY_KEYS = ("imagePolicy", "podNodeSelectorPluginConfig")
_TYPE_META_STRUCT = ('struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
                     'Kind string "json:\\"kind,omitempty\\"" }')


class ConfigError(ValueError):
    """A configuration kube-apiserver would refuse at start: the message is kube's error for it."""


class TypeMetaError(ConfigError):
    """runtime.Decode's missing-kind, missing-version and not-registered errors."""


@dataclass(frozen=True, slots=True)
class PluginConfiguration:
    """One `plugins` entry: `configuration` is the inline configuration as JSON bytes, `path` an absolute path."""

    name: str
    path: Path | None = None
    configuration: bytes | None = None


@dataclass(frozen=True, slots=True)
class AdmissionConfiguration:
    """The plugins' configurations, in the file's order; `legacy`: the file is in the unversioned format."""

    plugins: tuple[PluginConfiguration, ...] = ()
    legacy: bool = False

    def names(self) -> tuple[str, ...]:
        """The plugins configured, each once, in the file's order (the legacy format's two plugins)."""
        if self.legacy:
            return LEGACY_PLUGINS
        return tuple(dict.fromkeys(p.name for p in self.plugins))

    def config_for(self, name: str) -> bytes | None:
        """The first entry for `name`: its inline configuration, else its `path` file's bytes, else None. An
        unreadable `path` raises ConfigError (kube-apiserver exits on it)."""
        if self.legacy:
            return None  # the legacy format configures only the plugins in LEGACY_PLUGINS, which Capstan lacks
        for plugin in self.plugins:
            if plugin.name != name:
                continue
            if plugin.configuration is not None:
                return plugin.configuration
            if plugin.path is not None:
                try:
                    return plugin.path.read_bytes()
                except OSError as err:
                    raise ConfigError(f"Couldn't open admission plugin configuration {plugin.path}: "
                                      f"{os_error_text('open', plugin.path, err)}") from None
            return None
        return None


def os_error_text(op: str, path: Path, err: OSError) -> str:
    """Go's *fs.PathError text: `open /x: no such file or directory`."""
    if isinstance(err, IsADirectoryError):
        op = "read"
    reason = err.strerror or str(err)
    return f"{op} {path}: {reason[:1].lower()}{reason[1:]}"


def cannot_unmarshal(value: object, struct: str, field: str, go_type: str) -> ConfigError:
    """encoding/json's UnmarshalTypeError for a struct field."""
    return ConfigError(f"json: cannot unmarshal {json_kind(value)} into Go struct field {struct}.{field}"
                       f" of type {go_type}")


def compact_json(value: object) -> bytes:
    """A value as sigs.k8s.io/yaml hands it to kube's decoder: compact JSON, keys sorted."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode()


def decode(body: bytes, kinds: Collection[tuple[str, str]]) -> dict[str, Any]:
    """runtime.Decode of a JSON or YAML document through a scheme that knows the (apiVersion, kind) pairs in
    `kinds`: the document as a JSON object, or ConfigError with the decoder's words (TypeMetaError for a
    missing kind or version, or a kind not registered)."""
    try:
        doc = yamlread.load(body)
    except ValueError as err:
        raise ConfigError(f"error converting YAML to JSON: {err}") from None
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise ConfigError(f"couldn't get version/kind; json parse error: json: cannot unmarshal "
                          f"{json_kind(doc)} into Go value of type {_TYPE_META_STRUCT}")
    for key in ("apiVersion", "kind"):
        if doc.get(key) is not None and not isinstance(doc[key], str):
            raise ConfigError(f"couldn't get version/kind; json parse error: json: cannot unmarshal "
                              f"{json_kind(doc[key])} into Go struct field .{key} of type string")
    kind, api_version = doc.get("kind") or "", doc.get("apiVersion") or ""
    text = body.decode(errors="replace")
    if not kind:
        raise TypeMetaError(f"Object 'Kind' is missing in '{text}'")
    if not api_version:
        raise TypeMetaError(f"Object 'apiVersion' is missing in '{text}'")
    if (api_version, kind) not in kinds:
        raise TypeMetaError(f'no kind "{kind}" is registered for version "{api_version}"')
    return doc


def read(path: Path) -> AdmissionConfiguration:
    """The AdmissionConfiguration in a file, as kube-apiserver reads --admission-control-config-file."""
    try:
        body = path.read_bytes()
    except OSError as err:
        raise ConfigError(f"failed to read plugin config: unable to read admission control configuration from"
                          f' "{path}" [{os_error_text("open", path, err)}]') from None
    try:
        return parse(body, path.parent)
    except ConfigError as err:
        raise ConfigError(f"failed to read plugin config: {err}") from None


def parse(body: bytes, base: Path) -> AdmissionConfiguration:
    """An AdmissionConfiguration document; a relative `path` is taken from `base` (the file's directory)."""
    try:
        doc = decode(body, {(version, KIND) for version in API_VERSIONS})
    except TypeMetaError:
        legacy = yamlread.load(body)  # decode() read it: only its type meta was wrong
        if isinstance(legacy, dict) and any(key in legacy for key in _LEGACY_KEYS):
            return AdmissionConfiguration(legacy=True)
        raise
    plugins = doc.get("plugins")
    if plugins is None:
        return AdmissionConfiguration()
    struct = f"{doc['apiVersion'].rsplit('/', 1)[-1]}.AdmissionConfiguration"
    if not isinstance(plugins, list):
        raise cannot_unmarshal(plugins, "AdmissionConfiguration", "plugins",
                               f"[]{struct.split('.')[0]}.AdmissionPluginConfiguration")
    return AdmissionConfiguration(tuple(_plugin(entry, base, struct) for entry in plugins))


def _plugin(entry: object, base: Path, struct: str) -> PluginConfiguration:
    version = struct.split(".")[0]
    if entry is None:
        return PluginConfiguration("")
    if not isinstance(entry, dict):
        raise cannot_unmarshal(entry, "AdmissionConfiguration", "plugins",
                               f"{version}.AdmissionPluginConfiguration")
    name, path = entry.get("name"), entry.get("path")
    for field, value in (("name", name), ("path", path)):
        if value is not None and not isinstance(value, str):
            raise cannot_unmarshal(value, "AdmissionPluginConfiguration", f"plugins.{field}", "string")
    configuration = entry.get("configuration")
    absolute = None
    if path:
        absolute = Path(path) if os.path.isabs(path) else (base if str(base) not in ("", ".") else Path.cwd()) / path
    return PluginConfiguration(name or "", absolute,
                               compact_json(configuration) if configuration is not None else None)

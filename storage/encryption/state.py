"""The encryption configuration in force: which chain of providers each stored resource goes through.

`Encryption.open(path)` reads `--encryption-provider-config`, builds one `Chain` per resources entry (the
same provider objects for every resource of an entry) and starts its KMS v2 providers. Which chain a storage
key takes is decided from the key's resource, `/<group or core>/<resource>/...`, as kube's
transformerFromOverrides decides it: the entry naming the group and resource, else one naming `*.<group>`
(`*.` for the core group), else `*.*`, else the identity chain (an entry listed earlier wins over a later
one naming the same thing). The decision is kept per resource prefix.

With `reload=True` (`--encryption-provider-config-automatic-reload`) the file is checked every
RELOAD_INTERVAL; a changed file that validates and whose KMS plugins answer replaces the configuration at
once (writes from then on use the new first providers, reads try the new lists); one that does not is
logged and the configuration in force stays, as kube-apiserver's reload controller does. The KMS providers
replaced are closed a little later, once reads already under way are done with them.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from storage.encryption import config as cfg
from storage.encryption.ciphers import (
    UNENCRYPTED,
    AesCbc,
    AesGcm,
    Chain,
    Identity,
    Prefixed,
    SecretBox,
)
from storage.encryption.kms import KmsProvider
from storage.tasks import cancel_each

log = logging.getLogger(__name__)

RELOAD_INTERVAL = 1.0  # seconds between checks of the file (kube: inotify, and a re-read every minute)
RETIRE_DELAY = 30.0  # seconds a replaced KMS provider stays open for reads already under way
CORE = "core"  # the store keys' word for the core group


class ConfigError(cfg.ConfigError):
    """The configuration cannot be used: invalid, or a KMS plugin that does not answer at start."""


@dataclass(frozen=True, slots=True)
class _Loaded:
    digest: bytes
    overrides: dict[tuple[str, str], Chain]  # (group or "*", resource or "*") -> chain, first entry wins
    kms: tuple[KmsProvider, ...]


def _chain(providers: Sequence[cfg.Provider], kms: dict[str, KmsProvider]) -> Chain:
    out: list[Prefixed] = []
    for provider in providers:
        if provider.kind == "identity":
            out.append(Prefixed(b"", Identity()))
        elif provider.kind == "kms":
            assert provider.kms is not None
            plugin = kms.get(provider.kms.name) or KmsProvider(provider.kms)
            kms[provider.kms.name] = plugin
            out.append(Prefixed(f"k8s:enc:kms:v2:{provider.kms.name}:".encode(), plugin))
        else:
            make = {"aescbc": AesCbc, "aesgcm": AesGcm, "secretbox": SecretBox}[provider.kind]
            for key in provider.keys:
                out.append(Prefixed(f"k8s:enc:{provider.kind}:v1:{key.name}:".encode(), make(key.secret)))
    return Chain(out)


class Encryption:
    """The configuration in force, its KMS plugins and its reloading."""

    def __init__(self, path: Path, loaded: _Loaded, reload: bool) -> None:
        self.path = path
        self._loaded = loaded
        self._by_prefix: dict[bytes, Chain] = {}
        self._reloader: asyncio.Task[None] | None = None
        self._retiring: set[asyncio.Task[None]] = set()
        self.reloads = 0  # configurations put in force by reloading
        self.reload_failures = 0
        if reload:
            self._reloader = asyncio.get_running_loop().create_task(self._watch(), name="encryption-config-reload")
        self.generation = 0  # raised by every reload, so callers can drop what they derived from the old one

    @classmethod
    async def open(cls, path: Path, *, reload: bool = False) -> Encryption:
        """ConfigError when the file is unreadable or invalid. A KMS plugin that does not answer yet is no
        error at start (as in kube: writes through it fail and `kms-providers` fails until it answers)."""
        return cls(path, await _load(path), reload)

    # --- which chain a key takes --------------------------------------------------------------------------

    def chain(self, key: bytes) -> Chain:
        """The chain of the resource `key` belongs to."""
        end = key.find(b"/", key.find(b"/", 1) + 1)
        prefix = key[: end + 1] if end > 0 else key
        chain = self._by_prefix.get(prefix)
        if chain is None:
            chain = self._decide(prefix)
            self._by_prefix[prefix] = chain
        return chain

    def _decide(self, prefix: bytes) -> Chain:
        parts = prefix.decode("utf-8", "replace").split("/")
        if len(parts) < 3:
            return self._loaded.overrides.get(("*", "*"), UNENCRYPTED)
        group = "" if parts[1] == CORE else parts[1]
        resource = parts[2]
        overrides = self._loaded.overrides
        return (overrides.get((group, resource)) or overrides.get((group, "*")) or overrides.get(("*", "*"))
                or UNENCRYPTED)

    # --- KMS health ---------------------------------------------------------------------------------------

    def kms_providers(self) -> tuple[KmsProvider, ...]:
        return self._loaded.kms

    async def kms_health(self) -> str | None:
        """kube's `kms-providers` check: None when every KMS v2 plugin is healthy, else what is wrong."""
        providers = self._loaded.kms
        reasons = await asyncio.gather(*(provider.probe() for provider in providers))
        failed = [f"kms-provider {p.name}: {reason}" for p, reason in zip(providers, reasons, strict=True) if reason]
        return "; ".join(failed) or None

    # --- reload -------------------------------------------------------------------------------------------

    async def reload(self) -> bool:
        """Read the file again; put it in force when it changed, validates and its KMS plugins answer."""
        try:
            data = self.path.read_bytes()
        except OSError as err:
            log.warning("encryption config reload: cannot read %s: %s", self.path, err)
            self.reload_failures += 1
            return False
        if hashlib.sha256(data).digest() == self._loaded.digest:
            return False
        try:
            loaded = await _build(data, reuse=self._loaded.kms, require_healthy=True)
        except cfg.ConfigError as err:
            log.warning("encryption config reload failed, keeping the configuration in force: %s", err)
            self.reload_failures += 1
            # remember the bad file's digest so it is not tried again every second; a new edit is
            self._loaded = _Loaded(hashlib.sha256(data).digest(), self._loaded.overrides, self._loaded.kms)
            return False
        old = self._loaded
        self._loaded = loaded
        self._by_prefix = {}
        self.generation += 1
        self.reloads += 1
        log.info("encryption config reloaded from %s", self.path)
        kept = set(map(id, loaded.kms))
        retired = [provider for provider in old.kms if id(provider) not in kept]
        if retired:
            task = asyncio.get_running_loop().create_task(_retire(retired))
            self._retiring.add(task)
            task.add_done_callback(self._retiring.discard)
        return True

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(RELOAD_INTERVAL)
            try:
                await self.reload()
            except Exception:  # the reloader keeps going whatever one round met
                log.exception("encryption config reload")

    async def close(self) -> None:
        await cancel_each((self._reloader, *self._retiring))
        for provider in self._loaded.kms:
            await provider.close()


async def _retire(providers: Sequence[KmsProvider]) -> None:
    try:
        await asyncio.sleep(RETIRE_DELAY)
    finally:
        for provider in providers:
            await provider.close()


async def _load(path: Path) -> _Loaded:
    try:
        data = path.read_bytes()
    except OSError as err:
        raise ConfigError(f"error reading encryption provider configuration file {str(path)!r}: {err}") from None
    return await _build(data, reuse=(), require_healthy=False)


async def _build(data: bytes, reuse: Sequence[KmsProvider], require_healthy: bool) -> _Loaded:
    """Chains for a file's bytes, with its KMS providers started (ones whose configuration is unchanged are
    the same objects, keeping their DEKs); with `require_healthy`, a new plugin that does not answer fails it."""
    try:
        config = cfg.load(data)
    except cfg.ConfigError as err:
        raise ConfigError(str(err)) from None
    kept = {provider.name: provider for provider in reuse}
    kms: dict[str, KmsProvider] = {}
    for entry in config.resources:
        for provider in entry.providers:
            if provider.kms is not None and provider.kms.name not in kms:
                old = kept.get(provider.kms.name)
                if old is not None and old.config == provider.kms:
                    kms[provider.kms.name] = old
    reused = set(kms)
    overrides: dict[tuple[str, str], Chain] = {}
    for entry in config.resources:
        chain = _chain(entry.providers, kms)
        for gr in entry.resources:
            overrides.setdefault((gr.group, gr.resource), chain)
    started = [provider for name, provider in kms.items() if name not in reused]
    reasons = await asyncio.gather(*(provider.start() for provider in started))
    failed = [f"{p.name}: {reason}" for p, reason in zip(started, reasons, strict=True) if reason]
    if failed and not require_healthy:
        log.warning("KMS v2 plugins not answering yet (writes through them fail until they do): %s",
                    "; ".join(failed))
    elif failed:
        for plugin in started:
            await plugin.close()
        raise ConfigError("KMS v2 plugins did not answer: " + "; ".join(failed))
    return _Loaded(hashlib.sha256(data).digest(), overrides, tuple(kms.values()))

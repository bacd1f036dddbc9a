"""Encryption at rest's figures under kube-apiserver's metric names, for /metrics.

  apiserver_storage_transformation_operations_total{transformation_type, transformer_prefix, status}
      values encrypted (to_storage) and decrypted (from_storage) per provider prefix, OK or Unknown (failed),
      for the resources an entry lists (the decryptions the memo spares are not counted: none happened)
  apiserver_storage_envelope_transformation_cache_misses_total
      DEKs a KMS v2 provider had to ask its plugin to decrypt
  apiserver_encryption_config_controller_automatic_reload_success_total / _failures_total
      configurations put in force by --encryption-provider-config-automatic-reload, and changed files refused

The counters are plain integers kept where the work happens (ciphers.OPERATIONS, kms.CACHE_MISSES, the
Encryption's reload counts); this collector reads them when /metrics is asked.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from storage.encryption import ciphers, kms
from storage.encryption.state import Encryption


class EncryptionCollector(Collector):
    def __init__(self, encryption: Encryption) -> None:
        self._encryption = encryption

    def collect(self) -> Iterator[Metric]:
        operations = CounterMetricFamily(
            "apiserver_storage_transformation_operations",
            "Total number of transformations. Successful transformation will have a status 'OK' and a varied status"
            " string when the transformation fails.",
            labels=["transformation_type", "transformer_prefix", "status"])
        for (kind, prefix, status), count in sorted(ciphers.OPERATIONS.items()):
            operations.add_metric([kind, prefix, status], count)
        yield operations
        yield CounterMetricFamily(
            "apiserver_storage_envelope_transformation_cache_misses",
            "Total number of cache misses while accessing key decryption key(KEK).", value=kms.CACHE_MISSES[0])
        yield CounterMetricFamily(
            "apiserver_encryption_config_controller_automatic_reload_success",
            "Total number of successful automatic reloads of encryption configuration.",
            value=self._encryption.reloads)
        yield CounterMetricFamily(
            "apiserver_encryption_config_controller_automatic_reload_failures",
            "Total number of failed automatic reloads of encryption configuration.",
            value=self._encryption.reload_failures)

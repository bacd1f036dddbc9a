"""The etcd backend: the Store contract over an etcd v3 cluster, shared by several cores."""

from storage.etcd.config import DEFAULT_PREFIX, EtcdConfig
from storage.etcd.store import EtcdStore

__all__ = ["DEFAULT_PREFIX", "EtcdConfig", "EtcdStore"]

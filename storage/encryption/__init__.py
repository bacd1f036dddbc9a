"""Encryption at rest, as kube-apiserver's `--encryption-provider-config`: values encrypted at the store
boundary (store.py) by the providers an EncryptionConfiguration lists per resource (config.py, state.py):
identity, aescbc, aesgcm, secretbox (ciphers.py) and KMS v2 (kms.py), in kube's stored formats."""

from storage.encryption.ciphers import TransformError
from storage.encryption.config import ConfigError
from storage.encryption.state import Encryption
from storage.encryption.store import EncryptedStore

__all__ = ["ConfigError", "EncryptedStore", "Encryption", "TransformError"]

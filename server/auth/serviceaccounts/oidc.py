"""The service account issuer's discovery documents (kube's serviceaccount.openidConfiguration and its JWKS):
GET /.well-known/openid-configuration and GET /openid/v1/jwks, so relying parties outside the cluster verify
service account tokens without calling the API.

The core owns the keys, so the documents are built here and handed to the gateway as bytes. Both are served
to everyone who may read them (kube's system:service-account-issuer-discovery ClusterRole, bound to
system:serviceaccounts), with kube's cache header.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from server.auth.serviceaccounts.keys import VerificationKey, jwk

CONFIGURATION_PATH = "/.well-known/openid-configuration"
JWKS_PATH = "/openid/v1/jwks"
CONFIGURATION_TYPE = "application/json"
JWKS_TYPE = "application/jwk-set+json"
CACHE_CONTROL = "public, max-age=3600"


@dataclass(frozen=True, slots=True)
class Documents:
    configuration: bytes
    jwks: bytes


def documents(issuer: str, keys: tuple[VerificationKey, ...]) -> Documents:
    configuration = {
        "issuer": issuer,
        "jwks_uri": issuer.rstrip("/") + JWKS_PATH,
        "response_types_supported": ["id_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": sorted({k.algorithm for k in keys}),
    }
    return Documents(orjson.dumps(configuration), orjson.dumps({"keys": [jwk(k) for k in keys]}))

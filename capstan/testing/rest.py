"""Plain JSON calls through the official client's ApiClient, for what its typed APIs do not cover: any
group version (custom resources, discovery), server-side apply, and objects written as YAML spells them.

Going through the ApiClient keeps the kubeconfig's TLS, credentials and exec plugins, and its errors: a non-2xx
answer raises kubernetes.client.ApiException with the server's Status in `body`. Both of the client's
generations are spoken: 37 and later (param_serialize, call_api, response_deserialize) and 28 to 36 (one
call_api that serializes and deserializes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubernetes import client

Obj = dict[str, Any]


def request(api: client.ApiClient, method: str, path: str, *, query: Sequence[tuple[str, str]] = (),
            body: Obj | None = None, content_type: str = "application/json") -> Obj:
    """One JSON call through the client's own serialization, auth and errors (an ApiException off 2xx)."""
    headers = {"Accept": "application/json", **({"Content-Type": content_type} if body is not None else {})}
    if not hasattr(api, "param_serialize"):
        return _before_37(api, method, path, list(query), headers, body)
    serialized = api.param_serialize(method, path, query_params=list(query), header_params=headers, body=body,
                                     auth_settings=["BearerToken"])
    response = api.call_api(*serialized)
    response.read()  # type: ignore[no-untyped-call]
    answer: Obj = api.response_deserialize(response, {"2XX": "object"}).data  # type: ignore[assignment]
    return answer


def _before_37(api: client.ApiClient, method: str, path: str, query: list[tuple[str, str]], headers: dict[str, str],
               body: Obj | None) -> Obj:
    # Its REST layer JSON-encodes the body for a JSON content type and for apply's YAML (JSON is YAML) alike.
    legacy: Any = api  # typed as 37's client; this is the older one
    answer: Obj = legacy.call_api(path, method, query_params=query, header_params=headers, body=body,
                                  response_type="object", auth_settings=["BearerToken"],
                                  _return_http_data_only=True, _preload_content=True)
    return answer

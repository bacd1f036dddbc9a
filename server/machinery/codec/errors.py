"""The codec's typed errors: what a request body or a stored message can be wrong with.

A DecodeError is a client's mistake in a JSON body and carries kube-apiserver's own wording, so
the server can answer 400 with the Status message kube-apiserver would give:
`ConfigMap in version "v1" cannot be handled as a ConfigMap: <DecodeError.message>`.
An EncodeError is a message that has no Kubernetes JSON form (e.g. FieldsV1 bytes that are not
JSON); it means a bug or corrupt data, never a client's mistake.
"""

from __future__ import annotations


class DecodeError(ValueError):
    """A JSON value the schema cannot hold.

    message: exactly what kube-apiserver says, e.g. "json: cannot unmarshal number into Go struct
        field ConfigMap.data of type string" or "illegal base64 data at input byte 4".
    path: where, in Kubernetes field-path form, e.g. "data.key" or "metadata.ownerReferences[0].uid"
        ("" for the object itself).
    """

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.message = message
        self.path = path


class EncodeError(ValueError):
    """A message with no Kubernetes JSON rendering; path says which field, as in DecodeError."""

    def __init__(self, message: str, *, path: str = "") -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.message = message
        self.path = path

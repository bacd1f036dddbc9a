"""Label and field selectors, parsed and matched exactly as kube-apiserver does.

A list or watch request carries `labelSelector` and `fieldSelector` query
parameters; a bad one is answered with a 400 BadRequest whose message is the
parser's error text, which clients print as is. `labels` and `fields` reproduce
apimachinery's grammar and messages; this module holds what both errors share.
"""

from __future__ import annotations


class BadSelector(ValueError):
    """A selector kube-apiserver would reject with 400 BadRequest; `message` is the Status message."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def status(self) -> dict[str, object]:
        """The Status body kube-apiserver sends (`errors.NewBadRequest(err.Error())` in the list handler)."""
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": "BadRequest",
            "code": 400,
        }

"""Why a patch did not apply, and the Status kube-apiserver answers for it.

kube-apiserver's patch handler (endpoints/handlers/patch.go, interpretStrategicMergePatchError)
sorts strategicpatch's errors three ways:

    invalid patch format of primitive list / retainKeys / setElementOrder list  -> 400 BadRequest
    lists of lists are not supported                                             -> 422 Invalid, with
        NewGenericServerResponse's generic message (the library's text is not shown)
    anything else (a missing merge key, an unknown $patch, mismatched types...)  -> returned as a
        plain Go error, which ErrorToAPIStatus answers as 500 with reason "" (StatusReasonUnknown)
        and the error's text: kubectl prints `Error from server: map: map[...] does not contain
        declared merge key: uid`.

Custom resources never reach strategicpatch: their PATCH accepts no strategic merge content type
(415 UnsupportedMediaType).
"""

from __future__ import annotations

from typing import Any

from server.machinery.gofmt import go_s, go_type, go_v

# mergepatch's sentinel errors (k8s.io/apimachinery/pkg/util/mergepatch/errors.go).
BAD_PRIMITIVE_LIST = "invalid patch format of primitive list"
BAD_RETAIN_KEYS = "invalid patch format of retainKeys"
BAD_SET_ELEMENT_ORDER = "invalid patch format of setElementOrder list"
NO_LIST_OF_LISTS = "lists of lists are not supported"

CUSTOM_RESOURCE_PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
                               "application/apply-patch+yaml")


class PatchError(Exception):
    """A patch that cannot be applied. code, reason and str(error) are the Status kube-apiserver
    answers; detail is strategicpatch's own text (the same, except where the Status hides it)."""

    def __init__(self, message: str, *, code: int, reason: str, detail: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.detail = detail or message


class UnsupportedPatchError(PatchError):
    """Strategic merge patch of an object without a schema (a custom resource)."""

    def __init__(self) -> None:
        super().__init__(
            "the body of the request was in an unknown format - accepted media types include: "
            + ", ".join(CUSTOM_RESOURCE_PATCH_TYPES),
            code=415, reason="UnsupportedMediaType")


def bad_request(text: str) -> PatchError:
    return PatchError(text, code=400, reason="BadRequest")


def lists_of_lists() -> PatchError:
    return PatchError("the server rejected our request due to an error in our request",
                      code=422, reason="Invalid", detail=NO_LIST_OF_LISTS)


def failed(text: str) -> PatchError:
    """An error kube-apiserver passes through unwrapped: 500, StatusReasonUnknown."""
    return PatchError(text, code=500, reason="")


def no_merge_key(element: dict[str, Any], merge_key: str) -> PatchError:
    return failed(f"map: {go_v(element)} does not contain declared merge key: {merge_key}")


def bad_arg_type(expected: str, actual: Any) -> PatchError:
    return failed(f"expected a {expected}, but received a {go_type(actual)}")


def bad_patch_type(directive: Any, element: dict[str, Any]) -> PatchError:
    return failed(f"unknown patch type: {go_s(directive)} in map: {go_v(element)}")

"""The review kinds: authorization.k8s.io/v1 SubjectAccessReview, LocalSubjectAccessReview,
SelfSubjectAccessReview, SelfSubjectRulesReview and authentication.k8s.io/v1 TokenReview, SelfSubjectReview.

Create-only and never stored, as kube-apiserver 1.28 serves them (authentication.k8s.io/v1beta1 and v1alpha1
are off by default there, so SelfSubjectReview is v1 only): each is answered by server/auth/reviews.py through
Resource.answer_create. kube's bootstrap policy lets every authenticated user create the self reviews
(system:basic-user); the others are for those granted them (system:auth-delegator, admins).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from google.protobuf.message import Message

from capstan.api.authentication.v1 import authentication_pb2 as authentication_v1
from capstan.api.authorization.v1 import authorization_pb2 as authorization_v1
from server.auth import reviews
from server.machinery.schema import ProtoSchema
from server.machinery.values import Obj
from server.registry.resources import Resource

AUTHORIZATION = "authorization.k8s.io"
AUTHENTICATION = "authentication.k8s.io"

Answer = Callable[[Any, Resource, Obj], Awaitable[Obj]]


def _review(group: str, kind: str, message: type[Message], answer: Answer, *, namespaced: bool = False) -> Resource:
    return Resource(group=group, version="v1", resource=kind.lower() + "s", kind=kind, singular=kind.lower(),
                    namespaced=namespaced, schema=ProtoSchema(message), verbs=("create",), answer_create=answer)


KINDS: tuple[Resource, ...] = (
    _review(AUTHENTICATION, "TokenReview", authentication_v1.TokenReview, reviews.token_review),
    _review(AUTHENTICATION, "SelfSubjectReview", authentication_v1.SelfSubjectReview, reviews.self_subject_review),
    _review(AUTHORIZATION, "LocalSubjectAccessReview", authorization_v1.LocalSubjectAccessReview,
            reviews.local_subject_access_review, namespaced=True),
    _review(AUTHORIZATION, "SelfSubjectAccessReview", authorization_v1.SelfSubjectAccessReview,
            reviews.self_subject_access_review),
    _review(AUTHORIZATION, "SelfSubjectRulesReview", authorization_v1.SelfSubjectRulesReview,
            reviews.self_subject_rules_review),
    _review(AUTHORIZATION, "SubjectAccessReview", authorization_v1.SubjectAccessReview,
            reviews.subject_access_review),
)

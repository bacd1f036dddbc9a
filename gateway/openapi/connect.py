"""The operations of the subresources whose answers are streams, not objects: pods' exec, attach, portforward and
log, and the proxy of pods, services and nodes, worded and shaped as kube-apiserver's endpoint installer documents
them.

A connect subresource's kind is an options type (PodExecOptions, NodeProxyOptions, ...) that is never a body: its
fields are query parameters (their texts are the Go comments of those fields), every answer is a string, and each
HTTP method it takes is an operation `connect<GroupVersion><Method>[Namespaced]<Kind><Subresource>`; a proxy also
has the `/{path}` form (`...WithPath`). The log is read as `read...PodLog`, a string in any of its media types.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from capstan.core.v1 import core_service_pb2 as core_pb2
from gateway.openapi import parameters as params
from gateway.openapi.parameters import Parameter

Doc = dict[str, Any]

_CONTAINER = "Defaults to only container if there is only one container in the pod."
_ATTACH_TTY = ("TTY if true indicates that a tty will be allocated for the attach call. This is passed through the "
               "container runtime so the tty is allocated on the worker node by the container runtime. Defaults to "
               "false.")
# options kind -> its query parameters: (name, schema type, description).
OPTIONS: Mapping[str, Sequence[tuple[str, str, str]]] = {
    "PodExecOptions": (
        ("command", "string", "Command is the remote command to execute. argv array. Not executed within a shell."),
        ("container", "string", f"Container in which to execute the command. {_CONTAINER}"),
        ("stderr", "boolean", "Redirect the standard error stream of the pod for this call."),
        ("stdin", "boolean", "Redirect the standard input stream of the pod for this call. Defaults to false."),
        ("stdout", "boolean", "Redirect the standard output stream of the pod for this call."),
        ("tty", "boolean", "TTY if true indicates that a tty will be allocated for the exec call. Defaults to false."),
    ),
    "PodAttachOptions": (
        ("container", "string", f"The container in which to execute the command. {_CONTAINER}"),
        ("stderr", "boolean",
         "Stderr if true indicates that stderr is to be redirected for the attach call. Defaults to true."),
        ("stdin", "boolean",
         "Stdin if true, redirects the standard input stream of the pod for this call. Defaults to false."),
        ("stdout", "boolean",
         "Stdout if true indicates that stdout is to be redirected for the attach call. Defaults to true."),
        ("tty", "boolean", _ATTACH_TTY),
    ),
    "PodPortForwardOptions": (
        ("ports", "integer", "List of ports to forward Required when using WebSockets"),
    ),
    "PodProxyOptions": (
        ("path", "string", "Path is the URL path to use for the current proxy request to pod."),
    ),
    "ServiceProxyOptions": (
        ("path", "string", (
            "Path is the part of URLs that include service endpoints, suffixes, and parameters to use for the "
            "current proxy request to service. For example, the whole request URL is "
            "http://localhost/api/v1/namespaces/kube-system/services/elasticsearch-logging/_search?q=user:kimchy. "
            "Path is _search?q=user:kimchy.")),
    ),
    "NodeProxyOptions": (
        ("path", "string", "Path is the URL path to use for the current proxy request to node."),
    ),
}
_LOG_OPTIONS = (
    ("container", "string",
     "The container for which to stream logs. Defaults to only container if there is one container in the pod."),
    ("follow", "boolean", "Follow the log stream of the pod. Defaults to false."),
    ("insecureSkipTLSVerifyBackend", "boolean", (
        "insecureSkipTLSVerifyBackend indicates that the apiserver should not confirm the validity of the serving "
        "certificate of the backend it is connecting to.  This will make the HTTPS connection between the apiserver "
        "and the backend insecure. This means the apiserver cannot verify the log data it is receiving came from the "
        "real kubelet.  If the kubelet is configured to verify the apiserver's TLS credentials, it does not mean the "
        "connection to the real kubelet is vulnerable to a man in the middle attack (e.g. an attacker could not "
        "intercept the actual log data coming from the real kubelet).")),
    ("limitBytes", "integer", (
        "If set, the number of bytes to read from the server before terminating the log output. This may not "
        "display a complete final line of logging, and may return slightly more or slightly less than the "
        "specified limit.")),
    ("previous", "boolean", "Return previous terminated container logs. Defaults to false."),
    ("sinceSeconds", "integer", (
        "A relative time in seconds before the current time from which to show logs. If this value precedes the "
        "time a pod was started, only logs since the pod start will be returned. If this value is in the future, "
        "no logs will be returned. Only one of sinceSeconds or sinceTime may be specified.")),
    ("tailLines", "integer", (
        "If set, the number of lines from the end of the logs to show. If not specified, logs are shown from the "
        "creation of the container or sinceSeconds or sinceTime")),
    ("timestamps", "boolean", (
        "If true, add an RFC3339 or RFC3339Nano timestamp at the beginning of every line of log output. Defaults "
        "to false.")),
)
# The HTTP methods of each kind of connect subresource, in kube's order.
_STREAM_METHODS = ("get", "post")
_PROXY_METHODS = ("get", "put", "post", "delete", "options", "head", "patch")
STRING = {"schema": {"type": "string"}}
CONNECT_RESPONSES: Doc = {"200": {"description": "OK", "content": {"*/*": STRING}},
                          "401": {"description": "Unauthorized"}}
LOG_RESPONSES: Doc = {"200": {"description": "OK", "content": {
    media: STRING for media in ("application/json", "application/vnd.kubernetes.protobuf", "application/yaml",
                                "text/plain")}}, "401": {"description": "Unauthorized"}}


def is_connect(r: core_pb2.Resource, sub: core_pb2.Subresource) -> bool:
    """Whether the subresource is worded here rather than as an object's subresource."""
    return sub.kind in OPTIONS or (r.group == "" and r.resource == "pods" and sub.name == "log")


def _query(entries: Sequence[tuple[str, str, str]]) -> list[Parameter]:
    return [{"description": text, "in": "query", "name": name, "schema": {"type": kind, "uniqueItems": True}}
            for name, kind, text in entries]


def operations(r: core_pb2.Resource, sub: core_pb2.Subresource, *, gv: str, ns: str, scope: list[Parameter]
               ) -> list[tuple[str, str, str, str, list[Parameter], Doc, str, Doc]]:
    """(path suffix, method, operation id, description, parameters, responses, action, gvk) of each operation."""
    title = sub.name[:1].upper() + sub.name[1:]
    if sub.kind not in OPTIONS:  # pods/log
        gvk = {"group": r.group, "kind": r.kind, "version": r.version}
        parameters = [*scope, params.name(r.kind), *_query(_LOG_OPTIONS), params.query("pretty")]
        return [("", "get", f"read{gv}{ns}{r.kind}{title}", f"read {sub.name} of the specified {r.kind}", parameters,
                 LOG_RESPONSES, "get", gvk)]
    gvk = {"group": r.group, "kind": sub.kind, "version": r.version}
    parameters = [*scope, params.name(sub.kind), *_query(OPTIONS[sub.kind])]
    proxy = sub.name == "proxy"
    forms = [("", ""), ("/{path}", "WithPath")] if proxy else [("", "")]
    out = []
    for suffix, with_path in forms:
        taken = [*parameters, params.path_param("path", "path to the resource")] if with_path else parameters
        for method in _PROXY_METHODS if proxy else _STREAM_METHODS:
            out.append((suffix, method, f"connect{gv}{method.capitalize()}{ns}{r.kind}{title}{with_path}",
                        f"connect {method.upper()} requests to {sub.name} of {r.kind}", taken, CONNECT_RESPONSES,
                        "connect", gvk))
    return out

"""The OpenAPI v2 (Swagger 2.0) document of /openapi/v2: every group version's v3 document, merged and
converted back to the v2 shape kube-apiserver serves there.

kubectl 1.28 fetches /openapi/v2 before it looks at v3 (explain, and the validation of create, apply
and replace), so the v2 document must exist and parse; newer kubectls read v3 only. The conversion is
the reverse of kube-openapi's v2 -> v3 one:
    "#/components/schemas/X"            -> "#/definitions/X"
    {"allOf": [{"$ref": r}], ...}      -> {"$ref": r, ...}   (v2 keeps siblings of $ref)
    IntOrString, Quantity (oneOf)       -> {"type": "string"} with their format
    requestBody                         -> a body parameter named "body"; its media types -> consumes
    responses' content                  -> one schema per response; the media types -> produces
    parameters' schema                  -> type and uniqueItems on the parameter itself
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

Doc = dict[str, Any]

_V3_REF = "#/components/schemas/"
_V2_REF = "#/definitions/"


def swagger(documents: Iterable[Doc], *, version: str) -> Doc:
    documents = list(documents)
    paths: Doc = {}
    definitions: Doc = {}
    for doc in documents:
        for name, schema in doc["components"]["schemas"].items():
            definitions[name] = schema_v2(schema)
        for path, item in doc["paths"].items():
            paths[path] = _path_item(item)
    out: Doc = {"definitions": definitions, "info": {"title": "Kubernetes", "version": version}, "paths": paths,
                "swagger": "2.0"}
    schemes: Doc = {}
    for doc in documents:
        schemes.update(doc["components"].get("securitySchemes", {}))
    if schemes:  # kube's v2 document declares its schemes and requires each of them
        out["securityDefinitions"] = schemes
        out["security"] = [{name: []} for name in sorted(schemes)]
    return out


def schema_v2(schema: Doc) -> Doc:
    out: Doc = {}
    for key, value in schema.items():
        if key == "$ref":
            out[key] = _V2_REF + value.removeprefix(_V3_REF)
        elif key == "allOf" and len(value) == 1:
            out.update(schema_v2(value[0]))
        elif key == "oneOf":
            out["type"] = "string"  # IntOrString and Quantity: strings with a format in v2
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = schema_v2(value)
        elif key == "properties":
            out[key] = {name: schema_v2(prop) for name, prop in value.items()}
        else:
            out[key] = value
    return out


def _parameter(param: Doc) -> Doc:
    out = {key: value for key, value in param.items() if key != "schema"}
    out.update(param["schema"])
    return out


def _path_item(item: Doc) -> Doc:
    out: Doc = {}
    for key, value in item.items():
        if key == "parameters":
            out[key] = [_parameter(p) for p in value]
        else:
            out[key] = _operation(value)
    return out


def _operation(op: Doc) -> Doc:
    out: Doc = {key: value for key, value in op.items() if key not in ("parameters", "requestBody", "responses")}
    params = [_parameter(p) for p in op.get("parameters", ())]
    request = op.get("requestBody")
    if request is not None:
        out["consumes"] = list(request["content"])
        schema = next(iter(request["content"].values()))["schema"]
        params.append({"in": "body", "name": "body", "required": bool(request.get("required")),
                       "schema": schema_v2(schema)})
    if params:
        out["parameters"] = params
    responses: Doc = {}
    produces: list[str] = []
    for code, response in op["responses"].items():
        converted: Doc = {"description": response["description"]}
        content = response.get("content")
        if content:
            converted["schema"] = schema_v2(next(iter(content.values()))["schema"])
            produces.extend(m for m in content if m not in produces)
        responses[code] = converted
    out["responses"] = responses
    if produces:
        out["produces"] = produces
    return out


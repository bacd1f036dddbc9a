"""The real kubectl against a real `capstan serve` for core/v1 podtemplates: create from a manifest, get (the
printPodTemplate table, -o yaml with the template's defaults), explain from the served OpenAPI, and delete."""

from __future__ import annotations

import yaml

from tests.e2e.conftest import Kubectl
from tests.e2e.test_kubectl import header

MANIFEST = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "web"}, "template": {
    "metadata": {"labels": {"app": "web", "tier": "front"}},
    "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}, {"name": "log", "image": "busybox"}]}}}


def test_create_get_and_delete_a_podtemplate(kubectl: Kubectl, namespace: str) -> None:
    ran = kubectl("create", "-f", "-", "-n", namespace, input=yaml.safe_dump(MANIFEST))
    assert (ran.code, ran.out) == (0, "podtemplate/web created\n"), ran.err
    listed = kubectl("get", "podtemplates", "-n", namespace)
    assert listed.code == 0, listed.err
    assert header(listed.out) == ["NAME", "CONTAINERS", "IMAGES", "POD", "LABELS"]
    assert listed.out.splitlines()[1].split() == ["web", "app,log", "nginx:1.27,busybox", "app=web,tier=front"]
    shown = yaml.safe_load(kubectl("get", "podtemplate", "web", "-n", namespace, "-o", "yaml").out)
    spec = shown["template"]["spec"]
    assert (shown["metadata"]["generation"], spec["restartPolicy"], spec["dnsPolicy"]) == (1, "Always", "ClusterFirst")
    assert [c["imagePullPolicy"] for c in spec["containers"]] == ["IfNotPresent", "Always"]
    deleted = kubectl("delete", "podtemplate", "web", "-n", namespace)
    assert (deleted.code, deleted.out) == (0, 'podtemplate "web" deleted\n'), deleted.err
    assert kubectl("get", "podtemplate", "web", "-n", namespace).code == 1


def test_an_invalid_podtemplate_is_refused(kubectl: Kubectl, namespace: str) -> None:
    manifest = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "empty"}, "template": {"spec": {}}}
    ran = kubectl("create", "-f", "-", "-n", namespace, input=yaml.safe_dump(manifest))
    assert ran.code == 1
    assert 'The PodTemplate "empty" is invalid: template.spec.containers: Required value' in ran.err


def test_explain_podtemplate(kubectl: Kubectl) -> None:
    ran = kubectl("explain", "podtemplate")
    assert ran.code == 0, ran.err
    assert ran.out.startswith("KIND:       PodTemplate\nVERSION:    v1\n")
    assert "template\t<PodTemplateSpec>" in ran.out and "metadata\t<ObjectMeta>" in ran.out
    field = kubectl("explain", "podtemplate.template.spec.containers")
    assert field.code == 0, field.err
    assert "FIELD: containers <[]Container>" in field.out

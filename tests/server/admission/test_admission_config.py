"""--admission-control-config-file: the AdmissionConfiguration read as kube-apiserver 1.28 reads it, the
PodSecurity plugin's PodSecurityConfiguration taken from it (inline or by `path`), defaulted and validated with
kube's texts, and a real `capstan serve` (and `capstan kube-apiserver`'s mapping) started with it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from capstan.cli import commands, kubeapiserver, kubeflags
from server.admission import config
from server.admission.podsecurity import Configuration, Exemptions
from server.admission.podsecurity import config as psconfig
from server.admission.podsecurity.levels import DEFAULT_POLICY, LevelVersion, Policy
from tests.e2e.conftest import ROOT, Capstan, start_capstan, stop_capstan

HEAD = "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\n"
PSA = "apiVersion: pod-security.admission.config.k8s.io/v1\nkind: PodSecurityConfiguration\n"
RESTRICTED = LevelVersion("restricted")
BASELINE = LevelVersion("baseline")
PRIVILEGED = LevelVersion("privileged")
INIT = 'failed to initialize admission plugin "PodSecurity": '
DECODE = 'couldn\'t init admission plugin "PodSecurity": '
LABEL_ERROR = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
               "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
               "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")


def inline(psa: str, head: str = HEAD, others: str = "") -> str:
    """An AdmissionConfiguration with `psa` as PodSecurity's inline configuration."""
    return head + "plugins:\n" + others + "- name: PodSecurity\n  configuration:\n" + textwrap.indent(psa, "    ")


def write(directory: Path, name: str, text: str) -> Path:
    target = directory / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    return target


# (the AdmissionConfiguration, other files beside it by name, the PodSecurity configuration read)
VALID: list[tuple[str, str, dict[str, str], Configuration]] = [
    ("the example of kind's docs", inline(PSA + textwrap.dedent("""\
        defaults: {enforce: baseline, enforce-version: latest, audit: restricted, audit-version: latest,
                   warn: restricted, warn-version: latest}
        exemptions: {usernames: [], runtimeClasses: [], namespaces: [kube-system]}
        """)), {},
     Configuration(Policy(BASELINE, RESTRICTED, RESTRICTED), Exemptions(namespaces=frozenset({"kube-system"})))),
    ("unset levels are privileged, unset versions latest", inline(PSA + "defaults: {enforce: restricted, "
                                                                   "warn-version: v1.25}\n"), {},
     Configuration(Policy(RESTRICTED, PRIVILEGED, LevelVersion("privileged", 25)))),
    ("empty values are defaulted", inline(PSA + "defaults: {enforce: '', audit: baseline}\n"), {},
     Configuration(Policy(PRIVILEGED, BASELINE, PRIVILEGED))),
    ("v1beta1 and every exemption", inline(PSA.replace("/v1\n", "/v1beta1\n") + textwrap.dedent("""\
        exemptions: {usernames: [alice, "system:serviceaccount:a:b"], runtimeClasses: [gvisor.io],
                     namespaces: [a, b]}
        """)), {}, Configuration(DEFAULT_POLICY, Exemptions(frozenset({"alice", "system:serviceaccount:a:b"}),
                                                          frozenset({"a", "b"}), frozenset({"gvisor.io"})))),
    ("v1alpha1, JSON", '{"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AdmissionConfiguration", "plugins": '
     '[{"name": "PodSecurity", "configuration": {"apiVersion": "pod-security.admission.config.k8s.io/v1alpha1", '
     '"kind": "PodSecurityConfiguration", "defaults": {"enforce": "restricted", "enforce-version": "v1.0"}}}]}', {},
     Configuration(Policy(LevelVersion("restricted", 0), PRIVILEGED, PRIVILEGED))),
    ("the legacy group apiserver.k8s.io/v1alpha1", inline(PSA + "defaults: {audit: restricted}\n",
                                                           head=HEAD.replace("apiserver.config.k8s.io/v1",
                                                                             "apiserver.k8s.io/v1alpha1")), {},
     Configuration(Policy(PRIVILEGED, RESTRICTED, PRIVILEGED))),
    ("a relative path, from the file's directory",
     HEAD + "plugins:\n- name: PodSecurity\n  path: sub/psa.yaml\n",
     {"sub/psa.yaml": PSA + "defaults: {warn: baseline}\n"}, Configuration(Policy(PRIVILEGED, PRIVILEGED, BASELINE))),
    ("an inline configuration wins over a path",
     HEAD + "plugins:\n- name: PodSecurity\n  path: missing.yaml\n  configuration:\n"
     + textwrap.indent(PSA + "defaults: {enforce: baseline}\n", "    "), {},
     Configuration(Policy(BASELINE, PRIVILEGED, PRIVILEGED))),
    ("the first entry for the plugin counts", inline(PSA + "defaults: {enforce: baseline}\n")
     + "- name: PodSecurity\n  configuration: {}\n", {}, Configuration(Policy(BASELINE, PRIVILEGED, PRIVILEGED))),
    ("other plugins are not read", inline(PSA, others="- name: EventRateLimit\n  path: nowhere.yaml\n"
                                          "- name: ImagePolicyWebhook\n  configuration: {anything: 1}\n"), {},
     Configuration()),
    ("no PodSecurity entry: kube's default", HEAD + "plugins:\n- name: EventRateLimit\n  path: x.yaml\n", {},
     Configuration()),
    ("no plugins", HEAD, {}, Configuration()),
    ("an entry without configuration", HEAD + "plugins:\n- name: PodSecurity\n", {}, Configuration()),
    ("unknown fields of the AdmissionConfiguration are ignored", HEAD + "extra: 1\nplugins: []\n", {},
     Configuration()),
    ("the legacy unversioned format", "imagePolicy: {kubeConfigFile: x}\n", {}, Configuration()),
]


@pytest.mark.parametrize(("text", "files", "want"), [v[1:] for v in VALID], ids=[v[0] for v in VALID])
def test_reads_the_podsecurity_configuration(tmp_path: Path, text: str, files: dict[str, str],
                                             want: Configuration) -> None:
    for name, content in files.items():
        write(tmp_path, name, content)
    admission = config.read(write(tmp_path, "admission.yaml", text))
    assert psconfig.from_admission(admission) == want


# (the AdmissionConfiguration, other files beside it, kube-apiserver's error; {dir} is the file's directory)
INVALID: list[tuple[str, str, dict[str, str], str]] = [
    ("YAML that does not parse", "plugins: [\n", {},
     "failed to read plugin config: error converting YAML to JSON: yaml: line 1: did not find expected node content"),
    ("not an object", "- a\n", {},
     "failed to read plugin config: couldn't get version/kind; json parse error: json: cannot unmarshal array into "
     'Go value of type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string '
     '"json:\\"kind,omitempty\\"" }'),
    ("no kind", "plugins: []\n", {}, "failed to read plugin config: Object 'Kind' is missing in 'plugins: []\n'"),
    ("no apiVersion", "kind: AdmissionConfiguration\n", {},
     "failed to read plugin config: Object 'apiVersion' is missing in 'kind: AdmissionConfiguration\n'"),
    ("an unknown kind", HEAD.replace("AdmissionConfiguration", "PodSecurityConfiguration"), {},
     'failed to read plugin config: no kind "PodSecurityConfiguration" is registered for version '
     '"apiserver.config.k8s.io/v1"'),
    ("plugins not a list", HEAD + "plugins: PodSecurity\n", {},
     "failed to read plugin config: json: cannot unmarshal string into Go struct field AdmissionConfiguration.plugins"
     " of type []v1.AdmissionPluginConfiguration"),
    ("a missing path", HEAD + "plugins:\n- name: PodSecurity\n  path: psa.yaml\n", {},
     "Couldn't open admission plugin configuration {dir}/psa.yaml: open {dir}/psa.yaml: no such file or directory"),
    ("a path without kind", HEAD + "plugins:\n- name: PodSecurity\n  path: psa.yaml\n",
     {"psa.yaml": "defaults: {}\n"}, DECODE + "Object 'Kind' is missing in 'defaults: {}\n'"),
    ("an empty inline configuration", inline("{}\n"), {}, DECODE + "Object 'Kind' is missing in '{}'"),
    ("an unknown PodSecurityConfiguration version", inline(PSA.replace("/v1\n", "/v2\n")), {},
     DECODE + 'no kind "PodSecurityConfiguration" is registered for version '
     '"pod-security.admission.config.k8s.io/v2"'),
    ("unknown fields, strictly", inline(PSA + "defaults: {enforce: baseline, Audit: x}\nmode: y\n"), {},
     DECODE + 'strict decoding error: unknown field "defaults.Audit", unknown field "mode"'),
    ("a level that is no string", inline(PSA + "defaults: {enforce: 1}\n"), {},
     DECODE + "json: cannot unmarshal number into Go struct field PodSecurityDefaults.defaults.enforce of type "
     "string"),
    ("exemptions that are no list", inline(PSA + "exemptions: {namespaces: a}\n"), {},
     DECODE + "json: cannot unmarshal string into Go struct field PodSecurityExemptions.exemptions.namespaces of "
     "type []string"),
    ("an invalid level", inline(PSA + "defaults: {enforce: strict}\n"), {},
     INIT + "PodSecurity configuration error: enforce: must be one of privileged, baseline, restricted"),
    ("invalid levels and versions, in kube's order", inline(PSA + "defaults: {warn: x, audit-version: '1.25', "
                                                                   "enforce-version: v2.0}\n"), {},
     INIT + 'PodSecurity configuration error: [enforce-version: must be "latest" or "v1.x", audit-version: must be '
     '"latest" or "v1.x", warn: must be one of privileged, baseline, restricted]'),
    ("a duplicate namespace", inline(PSA + "exemptions: {namespaces: [kube-system, kube-system]}\n"), {},
     INIT + 'PodSecurity invalid: exemptions.namespaces[1]: Duplicate value: "kube-system"'),
    ("a namespace that is no DNS label", inline(PSA + "exemptions: {namespaces: [Kube]}\n"), {},
     INIT + f'PodSecurity invalid: exemptions.namespaces[0]: Invalid value: "Kube": {LABEL_ERROR}'),
    ("an empty username and a duplicate runtime class",
     inline(PSA + "exemptions: {usernames: [''], runtimeClasses: [a, a]}\n"), {},
     INIT + 'PodSecurity invalid: [exemptions.runtimeClasses[1]: Duplicate value: "a", exemptions.usernames[0]: '
     'Invalid value: "": username must not be empty]'),
]


@pytest.mark.parametrize(("text", "files", "message"), [v[1:] for v in INVALID], ids=[v[0] for v in INVALID])
def test_refuses_what_kube_refuses(tmp_path: Path, text: str, files: dict[str, str], message: str) -> None:
    for name, content in files.items():
        write(tmp_path, name, content)
    with pytest.raises(config.ConfigError) as refused:
        psconfig.from_admission(config.read(write(tmp_path, "admission.yaml", text)))
    assert str(refused.value) == message.replace("{dir}", str(tmp_path))


@pytest.mark.parametrize(("make", "message"), [
    (lambda d: d / "absent.yaml", 'unable to read admission control configuration from "{path}" '
                                  "[open {path}: no such file or directory]"),
    (lambda d: d, 'unable to read admission control configuration from "{path}" [read {path}: is a directory]'),
], ids=["missing", "a directory"])
def test_an_unreadable_file_is_refused(tmp_path: Path, make: Callable[[Path], Path], message: str) -> None:
    path = make(tmp_path)
    with pytest.raises(config.ConfigError) as refused:
        config.read(path)
    assert str(refused.value) == "failed to read plugin config: " + message.replace("{path}", str(path))


@pytest.mark.parametrize(("kube_flags", "want"), [
    (["--admission-control-config-file=conf/admission.yaml"], Path("conf/admission.yaml")),
    ([], None),
], ids=["given", "absent"])
def test_kube_apiserver_passes_the_flag(kube_flags: list[str], want: Path | None) -> None:
    argv = kubeapiserver.serve_argv(kubeflags.parse(["--etcd-servers=http://127.0.0.1:2379", *kube_flags]))
    assert commands.parse_args(argv).admission_control_config_file == want
    assert "admission-control-config-file" in kubeflags.HONOURED


RESTRICTED_FILE = inline(PSA + "defaults: {enforce: restricted}\nexemptions: {namespaces: [exempt]}\n")
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
       "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


@pytest.fixture(scope="module")
def restricted_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Capstan]:
    """`capstan serve` with PodSecurity enforcing restricted by default, namespace `exempt` exempt."""
    base = tmp_path_factory.mktemp("admission-config")
    serving = start_capstan(base / "data", "--workers", "1", "--admission-control-config-file",
                            str(write(base, "admission.yaml", RESTRICTED_FILE)))
    try:
        yield Capstan(serving.url, base / "data", base / "kubeconfig", serving.log)
    finally:
        stop_capstan(serving)


@pytest.mark.parametrize(("namespace", "code", "message"), [
    ("plain", 403, 'pods "p" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation'),
    ("exempt", 201, ""),
], ids=["refused under restricted defaults", "admitted in an exempt namespace"])
def test_a_server_started_with_the_file(restricted_server: Capstan, namespace: str, code: int, message: str) -> None:
    restricted_server.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
    got, body = restricted_server.request("POST", f"/api/v1/namespaces/{namespace}/pods", POD)
    assert (got, body.get("message", "")[:len(message)]) == (code, message)


def test_a_server_does_not_start_with_an_invalid_file(tmp_path: Path) -> None:
    path = write(tmp_path, "admission.yaml", inline(PSA + "defaults: {enforce: strict}\n"))
    ran = subprocess.run([sys.executable, "-m", "capstan", "serve", "--insecure", "--data-dir", str(tmp_path / "d"),
                          "--http-port", "0", "--grpc-port", "0", "--sync", "false", "--workers", "1",
                          "--admission-control-config-file", str(path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert (ran.returncode, ran.stderr.splitlines()[-1]) == (
        1, "capstan: " + INIT + "PodSecurity configuration error: enforce: must be one of privileged, baseline, "
        "restricted")

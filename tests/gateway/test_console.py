"""The web console (gateway/console/) against a real secure `capstan serve`, over HTTP and in a real headless
Chromium (tests/gateway/chromium.py): its security headers and public paths, the one-time login code of
`capstan console`, and in the browser: log in, browse a resource as the server's Table (a custom resource's with
its printer columns), a watched change appears without reload, an apply conflict shows as kube reports it, one
object's events, dependents, scale and delete, and RBAC hides what a limited user may not see.

One server and one browser for the module; screenshots go to the module's temporary directory (printed).
"""

from __future__ import annotations

import asyncio
import json
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from capstan.cli.console import ConsoleError
from capstan.cli.console import login_url as console_login_url
from capstan.testing.server import LocalServer, start
from tests.gateway.chromium import Browser, Page, executable

ADMIN = "console-admin-token-0123456789"  # a static token user in system:masters
LIMITED = "console-limited-token-0123456789"  # a static token user in group devs, who may read ConfigMaps in team
TOKENS = f"{ADMIN},root,uid-root,system:masters\n{LIMITED},lena,uid-lena,devs\n"
NS = "/api/v1/namespaces/team"
APPLY = "application/apply-patch+yaml"

needs_chromium = pytest.mark.skipif(executable() is None, reason="no chromium (apt-get install chromium)")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    base = tmp_path_factory.mktemp("console")
    (base / "tokens.csv").write_text(TOKENS)
    serving = start(base / "data", extra=("--token-auth-file", str(base / "tokens.csv")))
    try:
        yield serving
    finally:
        serving.stop()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    if executable() is None:
        pytest.skip("no chromium (apt-get install chromium)")
    base = tmp_path_factory.mktemp("chromium")
    running = Browser.start(base / "profile", base / "screenshots")
    print(f"console screenshots: {running.screenshots}")
    try:
        yield running
    finally:
        running.stop()


async def call(server: LocalServer, method: str, path: str, *, token: str = ADMIN, body: Any = None,
               content_type: str = "application/json") -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if body is not None:
        headers["Content-Type"] = content_type
    context = ssl.create_default_context(cafile=server.endpoints["ca"])
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context)) as session:
        data = body if isinstance(body, str) or body is None else json.dumps(body)
        async with session.request(method, server.url + path, data=data, headers=headers) as resp:
            text = await resp.text()
            try:
                return resp.status, json.loads(text)
            except ValueError:
                return resp.status, text


async def ensure_team(server: LocalServer) -> None:
    """Namespace team, ConfigMaps there, and a Role letting group devs read ConfigMaps (nothing else)."""
    await call(server, "POST", "/api/v1/namespaces", body={"metadata": {"name": "team"}})
    for name in ("alpha", "beta", "gamma"):
        await call(server, "POST", f"{NS}/configmaps", body={"metadata": {"name": name}, "data": {"k": name}})
    await call(server, "POST", f"{NS}/secrets", body={"metadata": {"name": "hidden"}, "stringData": {"p": "s"}})
    await call(server, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles", body={
        "metadata": {"name": "cm-reader"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]})
    await call(server, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings", body={
        "metadata": {"name": "devs-read"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "devs"}]})


def login_url(server: LocalServer) -> str:
    done = subprocess.run([sys.executable, "-m", "capstan", "console", "--data-dir", str(server.data_dir)],
                          capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.strip()


@pytest.mark.parametrize("path", ["/console/", "/console/app.js", "/console/console.css", "/console/api.js"])
async def test_assets_public_with_strict_csp(server: LocalServer, path: str) -> None:
    status, _ = await call(server, "GET", path, token="")
    assert status == 200
    context = ssl.create_default_context(cafile=server.endpoints["ca"])
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context)) as session, \
            session.get(server.url + path) as resp:
        csp = resp.headers["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "default-src 'none'" in csp and "frame-ancestors 'none'" in csp
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
        assert resp.headers["X-Content-Type-Options"] == "nosniff"
        assert resp.headers["Referrer-Policy"] == "no-referrer"
        body = await resp.text()
    assert "<script>" not in body and "onclick=" not in body  # no inline script the CSP would have to allow


@pytest.mark.parametrize(("method", "path", "token", "body", "code"), [
    ("GET", "/console", "", None, 200),  # redirected to /console/
    ("GET", "/console/nothing-here", "", None, 403),  # not an asset: authorized as a non-resource URL first
    ("POST", "/console/codes", "", {}, 403),
    ("POST", "/console/codes", LIMITED, {}, 403),
    ("POST", "/console/codes", ADMIN, {}, 201),
    ("POST", "/console/login", "", {"code": "made-up"}, 401),
    ("POST", "/console/login", "", "code=made-up", 400),  # a form post is not read
])
async def test_public_and_private_paths(server: LocalServer, method: str, path: str, token: str, body: Any,
                                        code: int) -> None:
    content_type = "application/x-www-form-urlencoded" if isinstance(body, str) else "application/json"
    status, answer = await call(server, method, path, token=token, body=body, content_type=content_type)
    assert status == code, answer


async def test_login_code_is_single_use_and_never_the_token(server: LocalServer) -> None:
    url = login_url(server)
    assert url.startswith(server.url + "/console/#code=")
    code = url.partition("#code=")[2]
    status, answer = await call(server, "POST", "/console/login", token="", body={"code": code})
    assert status == 200, answer
    token = answer["token"]
    assert token not in url and code != token
    status, review = await call(server, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", token=token,
                                body={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    assert status == 201, review
    assert review["status"]["userInfo"]["username"] == "system:serviceaccount:kube-system:capstan-console"
    status, again = await call(server, "POST", "/console/login", token="", body={"code": code})
    assert (status, again["reason"]) == (401, "Unauthorized")


@pytest.mark.parametrize(("endpoints", "expected"), [
    ({"http": "http://127.0.0.1:8080", "grpc": "127.0.0.1:50051"}, "http://127.0.0.1:8080/console/"),  # --insecure
    (None, "no running server's endpoints in"),
])
async def test_capstan_console_without_login(tmp_path: Path, endpoints: dict[str, str] | None, expected: str) -> None:
    if endpoints is None:
        with pytest.raises(ConsoleError, match=expected):
            await console_login_url(tmp_path)
        return
    (tmp_path / "endpoints.json").write_text(json.dumps(endpoints))
    assert await console_login_url(tmp_path) == expected


async def log_in(page: Page, server: LocalServer, token: str) -> None:
    await page.goto(server.url + "/console/")
    await page.wait("!document.getElementById('login').hidden")
    await page.fill("#token", token)
    await page.click("#login-form button")
    await page.wait("!document.getElementById('shell').hidden && document.querySelectorAll('#resources a').length")


def rows(table: str = "") -> str:
    return f"[...document.querySelectorAll('{table}.vrow')].map(r => r.innerText.replace(/\\s+/g, ' '))"


@needs_chromium
async def test_browser_login_by_url_browse_and_watch(server: LocalServer, browser: Browser) -> None:
    await ensure_team(server)
    url = login_url(server)
    async with browser.page() as page:
        await page.goto(url)
        assert await page.wait("document.getElementById('whoami').textContent") == \
            "system:serviceaccount:kube-system:capstan-console"
        assert "#code" not in await page.eval("location.href")  # the code left the address bar
        await page.wait("document.querySelectorAll('.card dl').length && !!document.querySelector('.card table')")
        await page.screenshot("overview")
        await page.fill("#namespace", "team")
        await page.goto(server.url + "/console/#/r/core/v1/configmaps")
        await page.wait(f"{rows()}.some(t => t.startsWith('alpha'))")
        headers = await page.eval("[...document.querySelectorAll('.vhead div')].map(d => d.textContent)")
        assert headers == ["Name", "Data", "Age"]  # the server's printer columns for ConfigMaps
        await call(server, "POST", f"{NS}/configmaps", body={"metadata": {"name": "delta"}, "data": {"a": "1"}})
        await page.text(".vrow.new", "delta")
        status, answer = await call(server, "PATCH", f"{NS}/configmaps/alpha", body={"data": {"k": "x", "l": "y"}},
                                    content_type="application/merge-patch+json")
        assert status == 200, answer
        await page.text(".vrow.changed", "alpha")
        await call(server, "DELETE", f"{NS}/configmaps/beta")
        await page.text(".vrow.deleted", "beta")
        await page.screenshot("configmaps-live")
        tokens = {await page.eval("sessionStorage.getItem('capstan.console.token')")}
        assert all(t and t not in u for t in tokens for u in page.urls), page.urls
        assert not page.errors, page.errors  # no exception, no CSP violation
        assert not page.failures, page.failures
    assert not any(t in server.log.read_text() for t in tokens)


@needs_chromium
async def test_browser_apply_conflict_shows(server: LocalServer, browser: Browser) -> None:
    await ensure_team(server)
    status, answer = await call(server, "PATCH", f"{NS}/configmaps/owned?fieldManager=other-tool", content_type=APPLY,
                                body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owned"},
                                      "data": {"mode": "a"}})
    assert status in (200, 201), answer
    async with browser.page() as page:
        await log_in(page, server, ADMIN)
        await page.goto(server.url + "/console/#/o/core/v1/configmaps/team/owned")
        await page.text(".yaml", "other-tool (Apply)")  # the owner beside the field it owns
        await page.screenshot("object-yaml")
        await page.click(".tabs button:last-child")  # Edit
        await page.wait("!!document.querySelector('textarea.editor')")
        await page.eval("(() => { const t = document.querySelector('textarea.editor'); const o = JSON.parse(t.value);"
                        " o.data.mode = 'b'; t.value = JSON.stringify(o); })()")
        await page.click(".edit button.primary")
        text = await page.text(".edit .failure")
        assert "Conflict" in text and 'conflict with "other-tool"' in text and ".data.mode" in text, text
        await page.screenshot("apply-conflict")
        status, live = await call(server, "GET", f"{NS}/configmaps/owned")
        assert live["data"] == {"mode": "a"}  # the dry run and the refused apply changed nothing
        await page.click(".edit input[name=force]")
        await page.click(".edit button.primary")
        await page.text(".edit .result", "Applied.")
        await page.click(".tabs button:nth-child(6)")  # History: the watch saw the forced apply
        assert "+   mode: b" in await page.text(".diff", "+   mode: b")
        await page.screenshot("history-diff")
    status, live = await call(server, "GET", f"{NS}/configmaps/owned")
    assert live["data"] == {"mode": "b"}
    assert [m["manager"] for m in live["metadata"]["managedFields"]] == ["capstan-console"]


@needs_chromium
async def test_browser_one_object_relations_scale_delete(server: LocalServer, browser: Browser) -> None:
    await ensure_team(server)
    status, owner = await call(server, "POST", "/apis/apps/v1/namespaces/team/deployments", body={
        "metadata": {"name": "web"}, "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
    assert status == 201, owner
    ref = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": owner["metadata"]["uid"]}
    await call(server, "POST", f"{NS}/configmaps", body={"metadata": {"name": "web-dep", "ownerReferences": [ref]}})
    await call(server, "POST", f"{NS}/events", body={
        "metadata": {"name": "web.1"}, "reason": "Tested", "message": "looked at by the console", "type": "Normal",
        "involvedObject": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": "team",
                           "uid": owner["metadata"]["uid"]}})
    async with browser.page() as page:
        await log_in(page, server, ADMIN)
        await page.goto(server.url + "/console/#/o/apps/v1/deployments/team/web")
        await page.text(".yaml", "replicas: 1")
        await page.click(".tabs button:nth-child(3)")  # Events
        await page.text(".tabbody", "looked at by the console")
        await page.click(".tabs button:nth-child(4)")  # Relations
        assert "ConfigMap web-dep" in await page.text(".tabbody", "ConfigMap web-dep")
        await page.click(".tabs button:last-child")  # Edit
        await page.fill(".edit input[name=replicas]", "3")
        await page.click(".edit .scale")
        await page.text(".edit .result", "Scaled to 3.")
        status, scaled = await call(server, "GET", "/apis/apps/v1/namespaces/team/deployments/web")
        assert scaled["spec"]["replicas"] == 3
        await page.fill(".edit select[name=propagationPolicy]", "Orphan")
        await page.click(".edit .remove")
        await page.click(".edit .confirm")
        await page.text(".edit .result", "Deleted.")
        await page.screenshot("deleted")
    status, _ = await call(server, "GET", "/apis/apps/v1/namespaces/team/deployments/web")
    assert status == 404
    status, orphan = await call(server, "GET", f"{NS}/configmaps/web-dep")
    assert status == 200 and not orphan["metadata"].get("ownerReferences"), orphan  # Orphan: the dependent stays


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
                               "type": "object", "properties": {"size": {"type": "integer"}}}}}},
                           "additionalPrinterColumns": [{"name": "Size", "type": "integer",
                                                         "jsonPath": ".spec.size"}]}]}}


@needs_chromium
async def test_browser_custom_resources_with_their_printer_columns(server: LocalServer, browser: Browser) -> None:
    await ensure_team(server)
    status, answer = await call(server, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body=CRD)
    assert status == 201, answer
    path = "/apis/example.com/v1/namespaces/team/widgets"
    for _ in range(200):  # served once the CRD is established
        status, answer = await call(server, "POST", path, body={
            "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 7}})
        if status == 201:
            break
        await asyncio.sleep(0.02)
    assert status == 201, answer
    async with browser.page() as page:
        await page.goto(server.url + "/console/")
        await page.eval("sessionStorage.setItem('capstan.console.namespace', 'team')")
        await log_in(page, server, ADMIN)
        await page.click("#resources a[data-resource='example.com/widgets']")
        await page.text(".vrow", "7")
        headers = await page.eval("[...document.querySelectorAll('.vhead div')].map(d => d.textContent)")
        assert headers == ["Name", "Size"]  # kube adds Age only to a CRD that names no columns
        await page.goto(server.url + "/console/#/r/autoscaling/v1/horizontalpodautoscalers")
        assert "v2" in await page.text("main h2 .versions", "v2")  # every served version, not only the preferred


@needs_chromium
async def test_browser_rbac_hides_and_forbids(server: LocalServer, browser: Browser) -> None:
    await ensure_team(server)
    async with browser.page() as page:
        await page.goto(server.url + "/console/")
        await page.eval("sessionStorage.setItem('capstan.console.namespace', 'team')")
        await log_in(page, server, LIMITED)
        links = await page.eval("[...document.querySelectorAll('#resources a')].map(a => a.textContent)")
        assert "configmaps" in links and "secrets" not in links, links
        assert "not yours to list" in await page.eval("document.getElementById('hidden-count').textContent")
        await page.goto(server.url + "/console/#/r/core/v1/secrets")
        text = await page.wait("document.querySelector('main h2').textContent.startsWith('Secret')"
                               " && document.querySelector('main .failure.forbidden').innerText")
        assert 'User "lena" cannot list resource "secrets"' in text, text
        await page.screenshot("forbidden")
        await page.goto(server.url + "/console/#/r/core/v1/configmaps")
        await page.wait(f"{rows()}.some(t => t.startsWith('gamma'))")
        await page.fill("input[name=search]", "amm")  # the name filter, in the page
        await page.wait(f"{rows()}.length === 1 && {rows()}[0].startsWith('gamma')")
        await page.fill("input[name=search]", "")
        await page.fill("input[name=fieldSelector]", "metadata.name=alpha")  # sent to the server
        await page.click("form.toolbar button[type=submit]")
        await page.wait(f"location.hash.includes('field=') && {rows()}.length === 1 && {rows()}[0].startsWith('alpha')")

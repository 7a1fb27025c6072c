"""The web console at ``/console`` (docs/console.md): its files as the handler serves them (types,
caching, no other host named), and the page in headless Chromium against a real cluster with auth on:
log in through the form, see a collection made through the API, search it by a stored entity's id and
read the same hits the API answers."""

from __future__ import annotations

import asyncio
import json
import re

import numpy as np
import pytest
import pytest_asyncio
import tornado.web
from tornado.httpclient import AsyncHTTPClient, HTTPRequest
from tornado.testing import AsyncHTTPTestCase

from tests.browser import chromium_page, is_png_of_a_page, keep_screenshot
from tests.conftest import poll_until, secured_settings
from vecgrid.deploy import EmbeddedCluster
from vecgrid.http import console
from vecgrid.http.base import BaseHandler

pytestmark = pytest.mark.slow

ADMIN, PASSWORD = "admin@console.test", "console password 1"
NAME, DIM, ROWS, QUERY_ID, TOP_K = "console_demo", 8, 300, 7, 10
ASSETS = ("index.html", "console.js", "console.css")


# --- the files ------------------------------------------------------------------------------------------

class ConsoleFilesTest(AsyncHTTPTestCase):
    def get_app(self):
        return tornado.web.Application(console.routes)

    def test_the_handler_is_on_the_one_base_and_renders_its_errors(self):
        assert issubclass(console.ConsoleFileHandler, BaseHandler)
        assert console.ConsoleFileHandler.write_error is BaseHandler.write_error
        missing = self.fetch("/console/nothing.js")
        assert missing.code == 404 and missing.headers["Content-Type"] == "application/json; charset=utf-8"
        assert json.loads(missing.body)["name"] == "NotFound"
        outside = self.fetch("/console/%2e%2e/__init__.py")   # the package's own module, one folder up
        assert outside.code in (403, 404) and json.loads(outside.body)["code"] == outside.code

    def test_console_redirects_to_the_folder_whose_index_is_the_page(self):
        redirect = self.fetch("/console", follow_redirects=False)
        assert redirect.code == 301 and redirect.headers["Location"] == "/console/"
        page = self.fetch("/console/")
        assert page.code == 200 and page.headers["Content-Type"] == "text/html; charset=utf-8"
        assert page.body == (console.STATIC_DIR / "index.html").read_bytes()
        # the page loads its script and style by relative URLs, from its own folder
        assert b'src="console.js"' in page.body and b'href="console.css"' in page.body

    def test_types_caching_and_policy_of_each_file(self):
        types = {"index.html": "text/html", "console.js": "text/javascript", "console.css": "text/css"}
        for name in ASSETS:
            response = self.fetch(f"/console/{name}")
            assert response.code == 200, name
            assert response.headers["Content-Type"] == f"{types[name]}; charset=utf-8"
            assert response.headers["Cache-Control"] == "no-cache"   # kept, but revalidated: no stale script
            assert response.headers["X-Content-Type-Options"] == "nosniff"
            assert "script-src 'self'" in response.headers["Content-Security-Policy"]
            again = self.fetch(f"/console/{name}", headers={"If-None-Match": response.headers["Etag"]})
            assert again.code == 304, name

    def test_no_file_names_another_host(self):
        for path in console.STATIC_DIR.iterdir():
            text = path.read_text()
            assert not re.search(r"\b(https?:)?//[a-z0-9.-]+\.[a-z]{2,}", text, re.I), path.name
            assert "http://" not in text and "https://" not in text, path.name
            assert "@import" not in text and "url(" not in text, path.name   # no fonts or images from anywhere
        html = (console.STATIC_DIR / "index.html").read_text()
        assert {m for m in re.findall(r'(?:src|href)="([^"#]+)"', html)} == {"data:,", "console.css", "console.js"}

    def test_the_script_never_parses_html(self):
        script = (console.STATIC_DIR / "console.js").read_text()
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
            assert sink not in script, sink


# --- the page against a cluster with auth on ----------------------------------------------------------

@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def secured(tmp_path_factory):
    settings = secured_settings(tmp_path_factory.mktemp("console"), ADMIN, PASSWORD)
    settings.dask.workers = 1
    cluster = EmbeddedCluster(settings)
    await asyncio.wait_for(cluster.start(), 120)
    try:
        yield cluster
    finally:
        await asyncio.wait_for(cluster.stop(), 60)


async def rest(base: str, method: str, path: str, body=None, token: str | None = None, custom: str | None = None):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if custom:
        headers["X-Service-Method"] = custom
    response = await AsyncHTTPClient().fetch(HTTPRequest(
        base + path, method=method, headers=headers, body=None if body is None else json.dumps(body),
        request_timeout=120))
    return json.loads(response.body) if response.body else None


async def click(devtools, selector: str) -> None:
    assert await devtools.evaluate(f"""(() => {{ const el = document.querySelector({json.dumps(selector)});
        if (!el) return false; el.click(); return true; }})()"""), selector


async def fill(devtools, selector: str, value: str) -> None:
    assert await devtools.evaluate(f"""(() => {{ const el = document.querySelector({json.dumps(selector)});
        if (!el) return false; el.value = {json.dumps(value)};
        el.dispatchEvent(new Event('input', {{bubbles: true}})); return true; }})()"""), selector


async def texts(devtools, selector: str) -> list[str]:
    return await devtools.evaluate(
        f"[...document.querySelectorAll({json.dumps(selector)})].map((el) => el.textContent)") or []


@pytest.mark.asyncio(loop_scope="module")
async def test_log_in_see_a_collection_and_search_it_by_id_in_chromium(secured, tmp_path):
    base = secured.addresses.http
    # the files are public (no data in them); the API is not
    page = await AsyncHTTPClient().fetch(base + "/console/")
    assert page.code == 200 and b"console.js" in page.body
    unauthenticated = await AsyncHTTPClient().fetch(base + "/collections", raise_error=False)
    assert unauthenticated.code == 401

    async with chromium_page(tmp_path / "profile") as devtools:
        await devtools.call("Page.navigate", url=base + "/console")

        async def login_form():
            return await devtools.evaluate("Boolean(document.querySelector('#login-email'))")

        await poll_until(login_form, 60, 0.2, "the login form (the API answered 401)")
        # a wrong password is refused in the page, with the API's message
        await fill(devtools, "#login-email", ADMIN)
        await fill(devtools, "#login-password", "wrong")
        await click(devtools, "#login-submit")

        async def refused():
            return "".join(await texts(devtools, "#login-error"))

        assert "NotAuthenticated (401)" in await poll_until(refused, 30, 0.2, "the refused login's message")
        await fill(devtools, "#login-password", PASSWORD)
        await click(devtools, "#login-submit")

        async def collections_view():
            return await devtools.evaluate("Boolean(document.querySelector('#collections') && "
                                           "!document.querySelector('#login'))")

        await poll_until(collections_view, 30, 0.2, "the collections view after the login")
        assert ADMIN in await devtools.text()

        # a collection made through the API, while the page is open
        token = (await rest(base, "POST", "/authentication",
                            {"strategy": "local", "email": ADMIN, "password": PASSWORD}))["accessToken"]
        await rest(base, "POST", "/collections", {"name": NAME, "dimension": DIM, "metric": "L2", "load": True}, token)
        rng = np.random.default_rng(3)
        vectors = rng.standard_normal((ROWS, DIM)).astype(np.float32)
        rows = [{"id": i, "vector": vectors[i].tolist(), "color": ["red", "green", "blue"][i % 3], "year": 1990 + i % 30}
                for i in range(ROWS)]
        await rest(base, "POST", f"/collections/{NAME}/entities", rows, token)
        await rest(base, "POST", "/collections", {"name": NAME}, token, custom="flush")   # a sealed segment to place

        async def listed():
            names = await texts(devtools, "#collection-list td[data-col=name]")
            states = await texts(devtools, "#collection-list td[data-col=state]")
            return dict(zip(names, states)).get(NAME) == "Loaded"

        await click(devtools, "#collections-refresh")
        await poll_until(listed, 30, 0.2, "the new collection listed as loaded")
        await click(devtools, f'a[data-collection="{NAME}"]')

        async def schema_shown():
            return await texts(devtools, "#schema td[data-col=field]")

        assert await poll_until(schema_shown, 30, 0.2, "the collection's schema") == ["id", "vector"]
        assert await texts(devtools, "#indexes td[data-col=name]") == ["vector"]

        # search by a stored entity's id, from the page
        await click(devtools, "#tab-button-search")
        await fill(devtools, "#search-id", str(QUERY_ID))
        await fill(devtools, "#search-limit", str(TOP_K))
        await fill(devtools, "#search-fields", "color, year")
        await click(devtools, "#search-run")

        async def hits_shown():
            return await texts(devtools, "#hits td[data-col=id]")

        page_ids = await poll_until(hits_shown, 30, 0.2, "the hits table")
        assert (await texts(devtools, "#search-error")) == [""]
        [answer] = await rest(base, "POST", f"/collections/{NAME}/entities",
                              {"ids": [QUERY_ID], "limit": TOP_K, "select": ["color", "year"]}, token, custom="search")
        assert page_ids == [str(hit["id"]) for hit in answer]
        assert page_ids[0] == str(QUERY_ID)   # the entity itself is its nearest neighbour
        assert await texts(devtools, "#hits td[data-col=year]") == [str(hit["year"]) for hit in answer]
        png = await devtools.screenshot()
        assert is_png_of_a_page(png)
        keep_screenshot(png, "console.png")

        # an API error reaches the page with the Feathers message
        await fill(devtools, "#search-id", "999999")
        await click(devtools, "#search-run")

        async def search_error():
            return "".join(await texts(devtools, "#search-error"))

        assert "No record found for id '999999'" in await poll_until(search_error, 30, 0.2, "the search's 404")

        # entities: a filter, a sort and a page
        await click(devtools, "#tab-button-entities")
        await fill(devtools, "#entities-filter", json.dumps({"color": "red"}))
        await fill(devtools, "#entities-sort", "year")
        await devtools.evaluate("document.querySelector('#entities-order').value = '-1'")
        await click(devtools, "#entities-apply")

        async def first_red_rows():
            status = "".join(await texts(devtools, "#entities-status"))
            return status if status.startswith("rows 1–25 of 100") else None

        await poll_until(first_red_rows, 30, 0.2, "the first page of red rows")
        years = [int(y) for y in await texts(devtools, "#entities-table td[data-col=year]")]
        assert years == sorted(years, reverse=True) and set(await texts(devtools, "#entities-table td[data-col=color]")) == {"red"}

        # the cluster: the node and where the sealed segment lives
        await devtools.evaluate("location.hash = '#/cluster'")
        node_address = secured.addresses.query_nodes[0][1]

        async def placed():
            segments = await texts(devtools, "#segments td[data-col=placement]")
            return segments if segments and node_address in " ".join(await texts(devtools, "#nodes td[data-col=address]")) else None

        placements = await poll_until(placed, 60, 0.5, "the node and the segment's placement")
        assert all(re.search(r"In(GPU|Memory)", p) for p in placements), placements

        # logging out asks for a login again, and the page's token is refused from then on
        page_token = await devtools.evaluate("sessionStorage.getItem('vecgrid.console.token')")
        assert page_token
        await click(devtools, "#logout")
        await poll_until(login_form, 30, 0.2, "the login form after logging out")
        assert await devtools.evaluate("sessionStorage.getItem('vecgrid.console.token')") is None
        revoked = await AsyncHTTPClient().fetch(base + "/collections", headers={"Authorization": f"Bearer {page_token}"},
                                                raise_error=False)
        assert revoked.code == 401

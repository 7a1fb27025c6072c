"""``/docs`` in headless Chromium: Swagger UI renders the coordinator's document (services on fakes,
auth on: the docs are public), loads nothing but the server's own files, and shows a custom method's
body — ``search`` of the entities service — among the alternatives of its ``POST``."""

from __future__ import annotations

import base64
from types import SimpleNamespace

import pytest
import tornado.httpserver
import tornado.netutil

from tests.browser import chromium_page, is_png_of_a_page, keep_screenshot
from tests.conftest import poll_until, secured_settings
from vecgrid.http.app import make_app
from vecgrid.http.services import RestContext
from vecgrid.storage.kv import SQLiteMetaStore

pytestmark = pytest.mark.slow

ENTITIES_POST = ("[...document.querySelectorAll('.opblock-post')].find(o => o.querySelector('.opblock-summary-path')"
                 "?.getAttribute('data-path') === '/collections/{collection}/entities')")
REQUEST_BODY = f"({ENTITIES_POST}).querySelector('.opblock-section-request-body')"


def _click(scope: str, label: str) -> str:
    return f"[...{scope}.querySelectorAll('button')].filter(b => b.innerText.trim() === {label!r}).forEach(b => b.click())"


@pytest.fixture
async def server(tmp_path):
    settings = secured_settings(tmp_path / "data", "admin@x.io", "correct horse battery")
    store = SQLiteMetaStore(tmp_path / "meta.db")
    ctx = RestContext(coord=SimpleNamespace(catalog=None, settings=settings), settings=settings,
                      proxy=SimpleNamespace(), store=store)
    sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
    http = tornado.httpserver.HTTPServer(make_app(ctx))
    http.add_sockets(sockets)
    try:
        yield f"http://127.0.0.1:{sockets[0].getsockname()[1]}"
    finally:
        http.stop()
        store.close()


async def test_swagger_ui_shows_the_search_body(server, tmp_path):
    async with chromium_page(tmp_path / "profile") as devtools:
        await devtools.call("Page.navigate", url=server + "/docs")
        await poll_until(lambda: devtools.evaluate("document.querySelectorAll('.opblock').length >= 50"),
                         60, 0.3, "Swagger UI's operations")
        text = await devtools.text()
        for summary in ("Log in: local strategy", "Log out", "Health of every component", "Prometheus metrics",
                        "Vector search: one flat list of hits", "Authorize"):   # Authorize: the bearer scheme
            assert summary in text, summary

        await devtools.evaluate(f"({ENTITIES_POST}).querySelector('button.opblock-summary-control').click()")
        await poll_until(lambda: devtools.evaluate(f"!!{REQUEST_BODY}"), 30, 0.2, "the operation's request body")
        examples = await devtools.evaluate(f"[...{REQUEST_BODY}.querySelectorAll('option')].map(o => o.value)")
        assert {"create", "search", "count"} <= set(examples), examples
        await devtools.evaluate(_click(REQUEST_BODY, "Schema"))
        for _ in range(3):   # each click opens one more level of the anyOf
            await devtools.evaluate(_click(REQUEST_BODY, "Expand all"))
            await poll_until(lambda: devtools.evaluate(f"{REQUEST_BODY}.innerText.includes('Collapse all')"), 10, 0.1,
                             "an expanded schema")
        body = await poll_until(
            lambda: devtools.evaluate(f"(t => t.includes('Search') && t.includes('vectors_b64') && t) "
                                      f"({REQUEST_BODY}.innerText)"), 20, 0.2, "the search body's schema")
        for key in ("vectors", "limit", "filter", "groupBy", "Count"):
            assert key in body, key

        loaded = await devtools.evaluate("performance.getEntriesByType('resource').map(e => e.name)")
        assert loaded and all(url.startswith(server + "/") for url in loaded), loaded

        box = await devtools.evaluate(f"(r => [r.x, r.y + window.scrollY, r.width]) "
                                      f"(({ENTITIES_POST}).getBoundingClientRect())")
        shot = await devtools.call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                                   clip={"x": 0, "y": max(box[1] - 40, 0), "width": 1400, "height": 1300,
                                         "scale": 1})
        png = base64.b64decode(shot["data"])
        assert is_png_of_a_page(png)
        keep_screenshot(png, "api-docs.png")

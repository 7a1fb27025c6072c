"""Headless Chromium for the suite's browser tests, driven through the DevTools protocol (no driver
package): Debian's ``chromium`` found or installed, one page per :func:`chromium_page`."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import AsyncIterator

import pytest
from tornado.httpclient import AsyncHTTPClient

from tests.conftest import poll_until


def find_chromium() -> str:
    """Debian's ``chromium``: found, or installed with apt-get when this process may; else skip."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        pytest.skip("no chromium on PATH and no root apt-get to install Debian's chromium package")
    done = subprocess.run(["apt-get", "install", "-y", "chromium"], capture_output=True, text=True, timeout=600)
    found = shutil.which("chromium")
    if found is None:
        pytest.skip(f"apt-get install chromium failed (rc {done.returncode}): {done.stderr[-500:]}")
    return found


# every text of the page, shadow roots included (Bokeh draws its widgets in shadow DOM)
DEEP_TEXT = """(() => { const out = []; const walk = (n) => {
  if (n.shadowRoot) walk(n.shadowRoot);
  for (const c of n.childNodes) { if (c.nodeType === 3) out.push(c.textContent); else walk(c); } };
  walk(document); return out.join(' '); })()"""


class DevTools:
    """Just enough of the Chrome DevTools protocol over Tornado's websocket client."""

    def __init__(self, ws) -> None:
        self.ws, self.next_id = ws, 0

    async def call(self, method: str, **params):
        self.next_id += 1
        self.ws.write_message(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = await self.ws.read_message()
            assert msg is not None, "chromium closed the DevTools connection"
            reply = json.loads(msg)
            if reply.get("id") == self.next_id:
                assert "error" not in reply, reply
                return reply["result"]

    async def evaluate(self, expression: str):
        """The value of a JavaScript expression (awaited when it is a promise)."""
        result = await self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        return result["result"].get("value")

    async def text(self) -> str:
        return await self.evaluate(DEEP_TEXT) or ""

    async def screenshot(self) -> bytes:
        shot = await self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        return base64.b64decode(shot["data"])


@contextlib.asynccontextmanager
async def chromium_page(profile: Path, size: str = "1400,1000") -> AsyncIterator[DevTools]:
    """A headless Chromium with a fresh profile under ``profile``; yields its first page's DevTools.
    Its TMPDIR is a directory of its own, removed afterwards: Chromium leaves its singleton socket's
    directory there when it is terminated (a short path: a Unix socket's is at most 107 bytes)."""
    from tornado.websocket import websocket_connect

    chromium = find_chromium()
    own_tmp = tempfile.mkdtemp(prefix="vecgrid-chromium-")
    browser = subprocess.Popen([chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                                "--no-first-run", "--disable-background-networking", "--disable-component-update",
                                "--disable-sync", "--disable-dev-shm-usage", "--remote-debugging-port=0",
                                f"--user-data-dir={profile}", f"--window-size={size}", "about:blank"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env={**os.environ, "TMPDIR": own_tmp})
    try:
        port_file = profile / "DevToolsActivePort"
        await poll_until(lambda: port_file.exists() and len(port_file.read_text().splitlines()) >= 2, 60, 0.2,
                         "chromium's DevTools port")
        port = int(port_file.read_text().splitlines()[0])
        targets = json.loads((await AsyncHTTPClient().fetch(f"http://127.0.0.1:{port}/json/list")).body)
        page = next(t for t in targets if t["type"] == "page")
        yield DevTools(await websocket_connect(page["webSocketDebuggerUrl"], max_message_size=64 << 20))
    finally:
        browser.terminate()
        browser.wait(30)
        shutil.rmtree(own_tmp, ignore_errors=True)


def is_png_of_a_page(png: bytes) -> bool:
    """A PNG big enough to hold a drawn page, not a blank image."""
    return png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def keep_screenshot(png: bytes, name: str) -> None:
    """Write ``docs/<name>``: when missing or asked for (``VECGRID_UPDATE_SCREENSHOT=1``), so that a test
    run leaves the tree clean."""
    from tests.conftest import REPO

    path = Path(REPO) / "docs" / name
    if not path.exists() or os.environ.get("VECGRID_UPDATE_SCREENSHOT") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(png)

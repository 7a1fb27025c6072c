"""``/console``: the web console's static files (docs/console.md), served by the REST port itself.

The console is three files in ``static/`` (``index.html``, ``console.js``, ``console.css``: plain
JavaScript, no build step, nothing fetched from another host) that talk to the REST API in the browser
like a Feathers REST client.  The files hold no data, so they are public even with auth on: every
collection, entity or node the page shows comes through the API and its token check.

:class:`ConsoleFileHandler` is Tornado's ``StaticFileHandler`` (ETag, ``If-None-Match`` → 304, ranges,
path checks) on the one :class:`~vecgrid.http.base.BaseHandler`, so a missing file is a Feathers 404
body like every other route's.  Answers say ``Cache-Control: no-cache``: a browser keeps the files but
revalidates them (a 304 when unchanged), so an upgraded vecgrid never runs an old script against a new
API.  A strict ``Content-Security-Policy`` lets the page load only its own files and talk only to its
own origin.

State: none beyond Tornado's per-process cache of file hashes (``StaticFileHandler``'s own).
"""

from __future__ import annotations

from pathlib import Path
import tornado.web

from vecgrid.http.base import BaseHandler

__all__ = ["STATIC_DIR", "ConsoleFileHandler", "routes"]

STATIC_DIR = Path(__file__).resolve().parent / "static"

# Fixed rather than the host's mimetypes table, which differs between systems (.js as
# application/javascript, text/javascript or missing).
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".png": "image/png",
    ".svg": "image/svg+xml",
}

CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                           "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")


class ConsoleFileHandler(BaseHandler, tornado.web.StaticFileHandler):
    """One file of ``static/``; ``/console`` redirects to ``/console/`` (the page's URLs are relative).
    BaseHandler comes first, so its ``write_error`` renders errors (StaticFileHandler has none)."""

    def get_content_type(self) -> str:
        assert self.absolute_path is not None
        return CONTENT_TYPES.get(Path(self.absolute_path).suffix.lower(), "application/octet-stream")

    def set_extra_headers(self, path: str) -> None:
        self.set_header("Cache-Control", "no-cache")
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Referrer-Policy", "no-referrer")
        self.set_header("Content-Security-Policy", CONTENT_SECURITY_POLICY)


_ARGS = {"path": str(STATIC_DIR), "default_filename": "index.html"}

routes = [
    (r"/console()", ConsoleFileHandler, _ARGS),
    (r"/console/(.*)", ConsoleFileHandler, _ARGS),
]

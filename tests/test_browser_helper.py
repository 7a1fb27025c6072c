"""The suite's headless Chromium leaves nothing behind outside the test's own directory."""

from __future__ import annotations

import pytest

from tests.browser import chromium_page

pytestmark = pytest.mark.slow


async def test_chromium_leaves_no_singleton_socket_directory_behind(tmp_path):
    """Chromium puts its singleton socket in a fresh directory under TMPDIR and leaves it there when it
    is terminated: every browser test left an ``org.chromium.Chromium.*`` directory in /tmp (36 on
    the development machine)."""
    profile = tmp_path / "profile"
    async with chromium_page(profile) as page:
        assert await page.evaluate("1 + 1") == 2
        socket = (profile / "SingletonSocket").readlink()
    assert not socket.parent.exists(), socket

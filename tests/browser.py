"""One headless Chromium for every browser test of the session (``browser`` fixture in
``conftest.py``): Debian's ``chromium`` driven by selenium through Debian's
``chromium-driver``, with the flags that work here; phone and desktop sizes switched by
Chrome DevTools' device emulation, cookies cleared between tests.
"""

from __future__ import annotations

import base64
import os
import shutil
import struct
from pathlib import Path

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
#: A phone's viewport [CSS px] (the office's pages must work at 390 px).
PHONE = (390, 844)
DESKTOP = (1280, 900)
#: Where the README's and the guide's screenshots are kept.
PREVIEWS = Path(__file__).resolve().parent.parent / "web" / "previews"


def gone(element):
    """A wait's condition (``WebDriverWait(d, s).until(gone(button))``): the element has left
    the page, i.e. the page a click led to has replaced it. As selenium's ``staleness_of``,
    and also when chromedriver answers, mid-navigation, that the node no longer belongs to
    the document (an "unknown error", not a stale reference, in the driver Debian ships)."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException

    def _gone(_driver) -> bool:
        try:
            element.is_enabled()
            return False
        except StaleElementReferenceException:
            return True
        except WebDriverException as e:
            if "does not belong to the document" in str(e) or "No node with given id" in str(e):
                return True
            raise
    return _gone


def available() -> bool:
    return bool(shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER))


class Browser:
    """A selenium driver and the sizes it is shown at."""

    def __init__(self, profile: Path):
        from selenium import webdriver

        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                  "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars", "--window-size=1280,900", f"--user-data-dir={profile}"):
            opts.add_argument(a)
        self.driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=CHROMEDRIVER), options=opts)
        self.width = DESKTOP[0]

    def phone(self, size: tuple[int, int] = PHONE) -> None:
        """Show pages as a phone of ``size`` [CSS px] does."""
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": size[0], "height": size[1], "deviceScaleFactor": 1, "mobile": True})
        self.width = size[0]

    def desktop(self) -> None:
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": DESKTOP[0], "height": DESKTOP[1], "deviceScaleFactor": 1, "mobile": False})
        self.width = DESKTOP[0]

    def fresh(self) -> None:
        """No cookies, a desktop: as a new person would come."""
        self.driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
        self.desktop()

    def text(self, element_id: str | None = None) -> str:
        """The text a person sees on the page (or in the element ``element_id``), read in one
        go by the page itself: never a stale element while the page refreshes its parts."""
        if element_id is None:
            return self.driver.execute_script("return document.body ? document.body.innerText : '';")
        return self.driver.execute_script("const e = document.getElementById(arguments[0]);"
                                          "return e ? e.innerText : '';", element_id)

    def scroll_width(self) -> int:
        return self.driver.execute_script("return document.documentElement.scrollWidth")

    def screenshot(self, path: Path, max_height: int = 4000) -> tuple[int, int]:
        """The whole page at the current width as a PNG; its size [px]."""
        height = min(max_height, self.driver.execute_script("return document.documentElement.scrollHeight"))
        png = self.driver.execute_cdp_cmd("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": self.width, "height": height, "scale": 1}})["data"]
        path.write_bytes(base64.b64decode(png))
        return struct.unpack(">II", path.read_bytes()[16:24])

    def previews(self, name: str, max_height: int = 2400) -> bool:
        """With ``SEWERWATCH_WRITE_PREVIEWS=1``: the page as it is now at desktop and at phone
        size, ``web/previews/<name>-desktop.png`` and ``<name>-phone.png`` (cut at
        ``max_height`` [px]); the phone's page must not scroll sideways. False (nothing
        written) without it. Ends at desktop size."""
        if not os.environ.get("SEWERWATCH_WRITE_PREVIEWS"):
            return False
        PREVIEWS.mkdir(exist_ok=True)
        self.desktop()
        self.screenshot(PREVIEWS / f"{name}-desktop.png", max_height)
        self.phone()
        assert self.scroll_width() <= PHONE[0], f"{name} scrolls sideways on a phone"
        self.screenshot(PREVIEWS / f"{name}-phone.png", max_height)
        self.desktop()
        return True

    def quit(self) -> None:
        self.driver.quit()

"""Headless Chromium for the memory browser's tests (Debian's chromium and chromium-driver,
which infra/setup.sh installs where apt is ours): selenium pointed at those executables, with
the flags this machine's closed network needs, and a wait for a view to finish rendering."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = (
    "--headless=new",
    "--no-sandbox",  # root in a container
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",  # no calls home: the network is closed here
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,900",
)


def need_chromium() -> None:
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).exists()]
    if missing:
        pytest.skip(
            f"{' and '.join(missing)} not installed: infra/setup.sh installs Debian's chromium"
            " and chromium-driver where it runs as root with apt"
        )
    pytest.importorskip("selenium", reason="selenium is a test dependency (pip install .[test])")


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium session with its own profile folder, quit and removed after."""
    need_chromium()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="memlake-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def rendered(driver: Any) -> str:
    return str(driver.execute_script("return document.body.dataset.rendered || ''"))


def wait_rendered(driver: Any, before: str, timeout: float = 20) -> None:
    """Until the page's router finished a view after the one stamped `before`."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout).until(lambda d: rendered(d) not in ("", before))


def visit(driver: Any, base: str, route: str) -> None:
    """Open /ui#<route> and wait for its view."""
    before = rendered(driver) if driver.current_url.startswith(base) else ""
    if driver.current_url.startswith(base + "/ui"):
        driver.execute_script("location.hash = arguments[0]", route)
    else:
        driver.get(f"{base}/ui#{route}")
    wait_rendered(driver, before)

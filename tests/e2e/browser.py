"""Opening a page in headless Chromium (Debian's chromium): its DOM after
load, a screenshot, and every message the page wrote to the console."""

import subprocess
from dataclasses import dataclass
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0"]


@dataclass
class Page:
    dom: str
    console: list[str]  # one entry per console message or uncaught error


def open_page(page: Path, profile: Path, screenshot: Path | None = None) -> Page:
    url = page.resolve().as_uri()
    base = ["chromium", *FLAGS, f"--user-data-dir={profile}"]
    dom = subprocess.run(base + ["--dump-dom", url], capture_output=True, text=True,
                         timeout=120)
    console = [line for line in dom.stderr.splitlines() if ":INFO:CONSOLE" in line]
    if screenshot is not None:
        shot = subprocess.run(base + ["--window-size=1280,2000", f"--screenshot={screenshot}",
                                      url], capture_output=True, text=True, timeout=120)
        console += [line for line in shot.stderr.splitlines() if ":INFO:CONSOLE" in line]
    return Page(dom.stdout, console)

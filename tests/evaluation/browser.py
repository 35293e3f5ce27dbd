"""Load a page in headless Chromium (the system package) over the DevTools protocol and
report what a person would notice: script errors, console errors, failed loads, and the
plots on the page with their rendered size."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import websocket

_LISTENING = re.compile(r"DevTools listening on (ws://\S+)")

#: Rendered size of every <img> and <svg>; an image counts only when it decoded.
MEASURE = """
JSON.stringify({
  ready: document.body.dataset.ready || null,
  title: document.title,
  rows: Array.from(document.querySelectorAll("tr[data-agent]")).map(function (tr) {
    return {table: tr.closest("table").id, agent: tr.dataset.agent, values: JSON.parse(tr.dataset.values)};
  }),
  text: document.body.innerText,
  plots: Array.from(document.querySelectorAll("img, svg")).map(function (el) {
    var box = el.getBoundingClientRect();
    return {tag: el.tagName.toLowerCase(), alt: el.getAttribute("alt"), width: box.width, height: box.height,
            decoded: el.tagName.toLowerCase() !== "img" || (el.complete && el.naturalWidth > 0)};
  })
})
"""


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@dataclass
class PageReport:
    errors: list[str] = field(default_factory=list)
    title: str = ""
    text: str = ""
    ready: str | None = None
    plots: list[dict[str, Any]] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    """Every table row that carries ``data-agent``: its table's id, the agent, its values."""

    def values(self, table: str) -> dict[str, dict[str, Any]]:
        """Agent -> the values of its row in the table with id ``table``."""
        return {row["agent"]: row["values"] for row in self.rows if row["table"] == table}

    @property
    def visible_plots(self) -> list[dict[str, Any]]:
        return [p for p in self.plots if p["decoded"] and p["width"] > 50 and p["height"] > 50]


class _Session:
    def __init__(self, url: str) -> None:
        self.ws = websocket.create_connection(url, timeout=30, suppress_origin=True)
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        self.ws.send(json.dumps(message))
        while True:
            reply = json.loads(self.ws.recv())
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        if any(e.get("method") == method for e in self.events):
            return
        while time.monotonic() < deadline:
            self.ws.settimeout(max(deadline - time.monotonic(), 0.1))
            event = json.loads(self.ws.recv())
            self.events.append(event)
            if event.get("method") == method:
                return
        raise TimeoutError(f"no {method} within {timeout}s")


def load_page(path: Path, timeout: float = 60.0, screenshot: Path | None = None) -> PageReport:
    exe = chromium()
    if exe is None:
        raise FileNotFoundError("chromium is not installed")
    # chromium's helper processes may still write to the profile as it goes away
    with tempfile.TemporaryDirectory(prefix="stamina-browser-", ignore_cleanup_errors=True) as profile:
        proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
             "--remote-debugging-port=0", f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            url = _browser_url(proc, timeout)
            cdp = _Session(url)
            target = cdp.call("Target.createTarget", url="about:blank")["targetId"]
            session = cdp.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
            for domain in ("Page", "Runtime", "Log", "Network"):
                cdp.call(f"{domain}.enable", session)
            cdp.call("Page.navigate", session, url=path.resolve().as_uri())
            cdp.wait_for("Page.loadEventFired", timeout)
            measured = cdp.call("Runtime.evaluate", session, expression=MEASURE, returnByValue=True)
            report = PageReport(**{k: v for k, v in json.loads(measured["result"]["value"]).items()})
            report.errors = _errors(cdp.events)
            if screenshot is not None:
                shot = cdp.call("Page.captureScreenshot", session, format="png", captureBeyondViewport=True)
                screenshot.parent.mkdir(parents=True, exist_ok=True)
                screenshot.write_bytes(base64.b64decode(shot["data"]))
            cdp.ws.close()
            return report
        finally:
            proc.kill()
            proc.wait()


def _browser_url(proc: subprocess.Popen, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line and proc.poll() is not None:
            break
        seen.append(line)
        match = _LISTENING.search(line)
        if match:
            return match.group(1)
    raise RuntimeError("chromium did not start its DevTools endpoint:\n" + "".join(seen[-20:]))


def _errors(events: list[dict[str, Any]]) -> list[str]:
    errors = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            errors.append("exception: " + details.get("exception", {}).get("description", details.get("text", "")))
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            errors.append("console: " + " ".join(str(a.get("value", a.get("description"))) for a in params.get("args", [])))
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            errors.append(f"log: {params['entry']['text']} {params['entry'].get('url', '')}")
        elif method == "Network.loadingFailed":
            errors.append(f"network: {params.get('errorText')}")
    return errors

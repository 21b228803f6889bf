"""Headless Chromium (Debian's `chromium`) driven over its DevTools pipe
(--remote-debugging-pipe: commands in on descriptor 3, answers and events out on 4, each a
JSON text ended by a NUL byte). For what a page dump cannot tell: a page left open
(reloading itself), its layout at a given window size (where a section lies on the first
screen), the chart objects' own state, and screenshots. Used by the report's tests and
insert-correlate --http's."""
import base64
import fcntl
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

import chromium_check

DEADLINE_S = 45


class Browser:
    def __init__(self, width=1366, height=768):
        if not os.path.exists(chromium_check.CHROMIUM):
            raise chromium_check.PageFailure(
                f"{chromium_check.CHROMIUM} not installed (scripts/setup.sh installs chromium)")
        self.width, self.height = width, height
        self.profile = tempfile.mkdtemp(prefix="insert-chromium-")
        cmd_r, self.cmd = os.pipe()
        self.answers, ans_w = os.pipe()
        # Above 3 and 4, so that moving them there never closes one of them.
        cmd_r, ans_w = (self._high(fd) for fd in (cmd_r, ans_w))
        argv = [chromium_check.CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                "--disable-extensions", "--hide-scrollbars", "--remote-debugging-pipe",
                f"--window-size={width},{height}", f"--user-data-dir={self.profile}",
                "about:blank"]
        # bash (dash takes no descriptor above 9) puts the pipes at 3 and 4, where Chromium
        # expects them.
        self.proc = subprocess.Popen(
            ["/bin/bash", "-c", f'exec "$0" "$@" 3<&{cmd_r} 4>&{ans_w} {cmd_r}<&- {ans_w}>&-', *argv],
            pass_fds=(cmd_r, ans_w), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        os.close(cmd_r)
        os.close(ans_w)
        self.buffer = b""
        self.next_id = 0
        self.session = None
        self.events = []  # every event Chromium sent (console messages, exceptions, log)

    @staticmethod
    def _high(fd):
        moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(fd)
        return moved

    def call(self, method, params=None, session=True):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self.cmd, json.dumps(message).encode() + b"\0")
        end = time.monotonic() + DEADLINE_S
        while True:
            while b"\0" in self.buffer:
                text, _, self.buffer = self.buffer.partition(b"\0")
                answer = json.loads(text)
                if "method" in answer:
                    self.events.append(answer)
                if answer.get("id") == self.next_id:
                    if "error" in answer:
                        raise chromium_check.PageFailure(f"{method}: {answer['error']}")
                    return answer["result"]
            if time.monotonic() >= end:
                raise chromium_check.PageFailure(f"chromium did not answer {method}")
            chunk = os.read(self.answers, 1 << 20)
            if not chunk:
                raise chromium_check.PageFailure("chromium closed its DevTools pipe")
            self.buffer += chunk

    def open(self, url):
        """A new tab at the window's size, loading `url` (a file path or a URL)."""
        if "://" not in url:
            url = "file://" + os.path.abspath(url)
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 session=False)["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.call(domain + ".enable")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": self.height, "deviceScaleFactor": 1,
                   "mobile": False})
        self.call("Page.navigate", {"url": url})

    def evaluate(self, expression):
        """The expression's value; None when it threw (a page that reloads itself can be
        between two documents)."""
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        return r.get("result", {}).get("value")

    def wait_for(self, expression, what):
        """Polls `expression` until it is truthy; returns its value."""
        end = time.monotonic() + DEADLINE_S
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() >= end:
                raise chromium_check.PageFailure(f"the page never {what}")
            time.sleep(0.1)

    def console(self):
        """What the page said on the console, threw, or Chromium logged about it (a CSP
        violation, a failed request)."""
        said = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.consoleAPICalled":
                said.append(f"console.{p.get('type')}: " +
                            " ".join(str(a.get("value", a.get("description"))) for a in p.get("args", [])))
            elif e["method"] == "Runtime.exceptionThrown":
                said.append("exception: " + json.dumps(p.get("exceptionDetails", {}))[:300])
            elif e["method"] == "Log.entryAdded":
                entry = p.get("entry", {})
                said.append(f"log {entry.get('level')}: {entry.get('text')}")
        return said

    def screenshot(self, path, full_page=False, max_height=16384):
        """The window (the first screen), or the whole page up to `max_height` px, as PNG."""
        params = {"format": "png"}
        if full_page:
            height = min(max_height, int(self.evaluate("document.documentElement.scrollHeight")))
            params.update(captureBeyondViewport=True,
                          clip={"x": 0, "y": 0, "width": self.width, "height": height, "scale": 1})
        data = self.call("Page.captureScreenshot", params)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path

    def close(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        os.close(self.cmd)
        os.close(self.answers)
        shutil.rmtree(self.profile, ignore_errors=True)

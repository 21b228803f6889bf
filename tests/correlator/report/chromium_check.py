"""Loads an HTML report in a real headless Chromium (Debian's `chromium`) and checks what the
page says about itself once its script ran (correlator/report/page_assets.cpp):
<body data-charts-ready> (charts drawn), data-charts-expected, data-chart-list ("id=points
..."), data-points on every canvas (the data elements Chart.js made), data-errors (script
errors and console.error calls, captured by the page), plus the console messages Chromium
logs. Used by the report's tests and the demo's."""
import html.parser
import json
import os
import shutil
import signal
import subprocess
import tempfile

CHROMIUM = os.environ.get("INSERT_CHROMIUM", "/usr/bin/chromium")
TIMEOUT_S = 45


class PageFailure(Exception):
    pass


class _Dom(html.parser.HTMLParser):
    """Collects body, canvas and html attributes and the tags seen."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.body, self.root, self.canvases, self.tags, self.text = {}, {}, {}, [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "body":
            self.body = a
        elif tag == "html":
            self.root = a
        elif tag == "canvas":
            self.canvases[a.get("id")] = a

    def handle_data(self, data):
        self.text.append(data)


ATTEMPTS = 3


def _run_once(argv):
    """One Chromium run: (returncode, stdout, stderr), or None when it did not finish."""
    # Its own session: Chromium's helper processes are killed with it, by process group.
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        stdout, stderr = p.communicate(timeout=TIMEOUT_S)
        return p.returncode, stdout, stderr
    except subprocess.TimeoutExpired:
        return None
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.communicate()


def load(page):
    """Runs Chromium on the page (a file, or a URL such as insert-correlate --http's live
    page); returns (dumped DOM text, parsed _Dom, console lines).
    Headless Chromium now and then never exits after dumping a page on this 2-vCPU machine
    while other tests load it (once in ~20 CI runs, the same page loading in 2 s otherwise):
    a run that does not finish is tried again, with a fresh profile, up to ATTEMPTS times.
    What a finished run says is never retried."""
    if not os.path.exists(CHROMIUM):
        raise PageFailure(f"{CHROMIUM} not installed (scripts/setup.sh installs chromium)")
    for attempt in range(ATTEMPTS):
        profile = tempfile.mkdtemp(prefix="insert-chromium-")
        try:
            argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                    "--disable-extensions", "--enable-logging=stderr", "--v=0",
                    f"--user-data-dir={profile}", "--virtual-time-budget=10000", "--dump-dom",
                    page if "://" in page else "file://" + os.path.abspath(page)]
            result = _run_once(argv)
        finally:
            shutil.rmtree(profile, ignore_errors=True)
        if result is not None:
            break
    else:
        raise PageFailure(f"chromium did not finish within {TIMEOUT_S} s, {ATTEMPTS} times")
    returncode, stdout, stderr = result
    if returncode != 0 or "<body" not in stdout:
        raise PageFailure(f"chromium exited {returncode}: {stderr[-1500:]}")
    console = [l for l in stderr.splitlines() if ":CONSOLE" in l]
    dom = _Dom()
    dom.feed(stdout)
    return stdout, dom, console


def check(page, expected=None):
    """Asserts the page loaded without errors and drew every chart it lists with data.
    `expected`: {canvas id: data points} the page must show exactly. Returns the _Dom."""
    text, dom, console = load(page)
    errors = dom.body.get("data-errors")
    if errors is None:
        raise PageFailure("no data-errors on <body>: the page's script did not run")
    if json.loads(errors) != [] or json.loads(dom.root.get("data-errors", "[]")) != []:
        raise PageFailure(f"script errors: {errors} {dom.root.get('data-errors')}")
    if console:
        raise PageFailure(f"console messages: {console[:5]}")
    ready, wanted = dom.body.get("data-charts-ready"), dom.body.get("data-charts-expected")
    listed = dict(item.split("=") for item in dom.body.get("data-chart-list", "").split())
    listed = {k: int(v) for k, v in listed.items()}
    if ready is None or int(ready) != int(wanted) or int(ready) != len(listed):
        raise PageFailure(f"charts ready {ready}, expected {wanted}, listed {listed}")
    drawn = json.loads(dom.body.get("data-chart-points", "{}"))
    for cid, points in listed.items():
        canvas = dom.canvases.get(cid)
        if canvas is None or int(canvas.get("data-points", -1)) != points or drawn.get(cid) != points:
            raise PageFailure(f"chart {cid}: {points} points listed, canvas says "
                              f"{canvas and canvas.get('data-points')}, script {drawn.get(cid)}")
        if points <= 0:
            raise PageFailure(f"chart {cid} has no data")
    if expected is not None and listed != expected:
        raise PageFailure(f"charts {listed}, expected {expected}")
    if any(tag in ("svg", "img", "iframe", "object", "embed") for tag, _ in dom.tags):
        raise PageFailure("the page holds markup that came from a record")
    dom.dump = text
    return dom

#!/usr/bin/env python3
"""insert-correlate --http (correlator/run/run_service.hpp, docs/correlation.md 11) on the
fixed records of tests/correlator/report/fixture.py, streamed into --listen:

  metrics   /metrics while the run goes on: the records read by type, 340 e2e joins, both
            alerts fired (rkey_unknown, peer_mismatch), the latency histograms of the two
            applications (client 1's 300 network parts of 5 us in le="5e-06", its 20 of
            205 us above le="0.0002"), the hosts' clock offsets (same_clock), accepted by
            promtool when installed, every family as docs/correlation.md's table lists it
            (name and type); after a later record moves the watermark past the
            alerts, alerts_total says 2 and the run's records hold exactly those; / is the
            report page with its policy as a header and the reload script; 404, HEAD; a
            batch run with --http writes the records a run without it writes; bad --http
            values and a port in use: exit 2, one line
  page      the live page in a real headless Chromium (Debian's chromium; chromium_check.py as
            for the static page): after the attack-free records it loads with no script
            error, draws its charts with the fixture's data points, and says "No alerts.";
            then, loaded and left open (over Chromium's DevTools pipe) while the attack and a
            later record are streamed, it reloads itself and its alert table shows both new
            alerts

usage: http_test.py CASE"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "report"))
import chromium_check  # noqa: E402
import chromium_session  # noqa: E402
import fixture  # noqa: E402

SRC = os.environ.get("INSERT_SOURCE_ROOT", os.path.join(HERE, "..", "..", ".."))
BUILD = os.environ.get("INSERT_BUILD_ROOT", os.path.join(SRC, "build"))
CORRELATE = os.path.join(BUILD, "correlator", "insert-correlate")
STREAM = os.path.join(SRC, "scripts", "stream-records.py")
DEADLINE_S = 30


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def write_lines(path, records):
    with open(path, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)
    return path


def inputs(tmp):
    """Batch 1: the fixture without its attack (dp1, trace1). Batch 2: the attack (dp2) and a
    host record 3 s later (trace2: a memory region registered), which moves the watermark
    past the alerts' --alert-gap so that they end and are written."""
    dp, host = fixture.records(attack=False)
    dp_all, _ = fixture.records(attack=True)
    attack = [m for m in dp_all if m["src_ip"] == "10.0.0.9"]
    later = fixture.SERVER.verb("reg_mr", fixture.T0 + 3 * 10**9, mr="0xf0", pd="0x2000",
                                addr=0x900000, length=4096, iova=0x900000, access=2, lkey=88,
                                rkey=88, ret=0)
    return (write_lines(os.path.join(tmp, "dp1.jsonl"), dp),
            write_lines(os.path.join(tmp, "trace1.jsonl"), host),
            write_lines(os.path.join(tmp, "dp2.jsonl"), attack),
            write_lines(os.path.join(tmp, "trace2.jsonl"), [later]))


class Correlator:
    """insert-correlate --listen SOCK --http 127.0.0.1:0; its URL from its start line."""

    def __init__(self, tmp, *extra):
        self.sock = os.path.join(tmp, "c.sock")
        self.records = os.path.join(tmp, "live.jsonl")
        self.proc = subprocess.Popen(
            [CORRELATE, "--listen", self.sock, "--same-clock", "--records", self.records,
             "--http", "127.0.0.1:0", "--interval", "0.3", "--max-delay", "0.3", *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.err = []
        self.url = None
        started = threading.Event()

        def read():
            for line in self.proc.stderr:
                self.err.append(line)
                m = re.search(r"serving (http://[0-9.:]+)/ ", line)
                if m:
                    self.url = m.group(1)
                    started.set()
            started.set()

        threading.Thread(target=read, daemon=True).start()
        started.wait(DEADLINE_S)
        check(self.url, f"no 'serving' line: {''.join(self.err)}")
        end = time.monotonic() + DEADLINE_S
        while not os.path.exists(self.sock):
            check(time.monotonic() < end and self.proc.poll() is None, "--listen did not start")
            time.sleep(0.05)

    def stream(self, *files):
        subprocess.run([sys.executable, STREAM, self.sock, *files, "--speed", "0"], check=True,
                       timeout=60)

    def get(self, path, method="GET"):
        req = urllib.request.Request(self.url + path, method=method)
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, dict(r.headers), r.read().decode()

    def metrics(self):
        """{series: value} of /metrics (histogram buckets included)."""
        _, _, text = self.get("/metrics")
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                series, _, value = line.rpartition(" ")
                out[series] = float(value)
        return out

    def wait_for(self, what, cond):
        end = time.monotonic() + DEADLINE_S
        while True:
            m = self.metrics()
            if cond(m):
                return m
            check(time.monotonic() < end, f"{what} not within {DEADLINE_S} s")
            check(self.proc.poll() is None, f"insert-correlate exited: {''.join(self.err)}")
            time.sleep(0.1)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self.proc.returncode


def families(text):
    """{name: type} of an exposition's # TYPE lines."""
    return dict(line.split()[2:4] for line in text.splitlines() if line.startswith("# TYPE "))


def documented(path, marker):
    """{name: type} of the table between <!-- MARKER: begin --> and <!-- MARKER: end -->."""
    text = open(path).read()
    table = text.split(f"<!-- {marker}: begin -->")[1].split(f"<!-- {marker}: end -->")[0]
    return {m.group(1): m.group(2) for m in re.finditer(r"^\| `(\w+)` \| (\w+) \|", table, re.M)}


def case_metrics(tmp):
    dp1, trace1, dp2, trace2 = inputs(tmp)
    c = Correlator(tmp)
    try:
        c.stream(dp1, trace1, dp2)
        m = c.wait_for("340 e2e records and both alerts fired",
                       lambda m: m.get("insert_correlate_e2e_total") == 340 and
                       m.get('insert_correlate_alerts_fired_total{kind="peer_mismatch"}') == 1)
        want = {
            'insert_correlate_records_in_total{type="msg"}': 341,
            'insert_correlate_records_in_total{type="host"}': 697,
            'insert_correlate_records_in_total{type="qp"}': 0,
            'insert_correlate_bad_lines_total{reason="not_json"}': 0,
            'insert_correlate_alerts_fired_total{kind="rkey_unknown"}': 1,
            'insert_correlate_alerts_fired_total{kind="rkey_scan"}': 0,
            'insert_correlate_alerts_firing{kind="rkey_unknown"}': 1,
            'insert_correlate_alerts_total{kind="rkey_unknown"}': 0,
            'insert_correlate_latency_apps': 2,
            'insert_correlate_finished': 0,
            'insert_correlate_info{version="0.1.0",mode="live"}': 1,
        }
        for series, value in want.items():
            check(m.get(series) == value, f"{series} = {m.get(series)}, expected {value}")
        app1 = f'app="{fixture.HOSTILE_COMM}[100]@hA"'
        net = f'insert_correlate_latency_seconds_bucket{{{app1},part="network",le='
        for le, n in (("2e-06", 0), ("5e-06", 300), ("0.0002", 300), ("0.0005", 320), ("+Inf", 320)):
            check(m.get(f'{net}"{le}"}}') == n, f"client 1's network le={le}: {m.get(net + repr(le))}")
        check(m.get(f'insert_correlate_latency_seconds_count{{{app1},part="total"}}') == 320,
              "client 1's total count")
        for host in ("hA", "hB"):
            check(m.get(f'insert_correlate_clock_offset_seconds{{host="{host}",source="same_clock"}}')
                  == 0, f"clock of {host}")
        _, _, text = c.get("/metrics")
        # The insert_correlate_bus_* families are a --nats run's (nats_correlate_takeover
        # reads them); this is a --listen run.
        listed = {k: v for k, v in documented(os.path.join(SRC, "docs", "correlation.md"),
                                              "metrics").items()
                  if not k.startswith("insert_correlate_bus_")}
        check(families(text) == listed,
              f"/metrics families {families(text)} differ from docs/correlation.md's table")
        promtool = shutil.which("promtool")
        if promtool:
            r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                               text=True, timeout=30)
            check(r.returncode == 0, f"promtool: {r.stdout} {r.stderr}")
        # The page, its policy, the reload script.
        status, headers, page = c.get("/")
        check(status == 200 and headers["Content-Type"].startswith("text/html")
              and "default-src 'none'" in headers.get("Content-Security-Policy", "")
              and "location.reload()" in page and "INSERT end-to-end report" in page
              and "http://" not in page.replace("http://www.w3.org", ""), "the live page")
        status, _, body = c.get("/metrics", "HEAD")
        check(status == 200 and body == "", "HEAD /metrics")
        try:
            c.get("/nothing")
            check(False, "/nothing answered")
        except urllib.error.HTTPError as e:
            check(e.code == 404, f"/nothing: {e.code}")
        # An input's own series while it is connected: this process, one record of a type
        # the join ignores and one bad line.
        producer = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        producer.connect(c.sock)
        producer.sendall(b'{"type":"trace_start","t_ns":1}\nnot json\n')
        own = f'[{os.getpid()}]",input="'
        m = c.wait_for("this producer's series", lambda m: any(
            k.startswith("insert_correlate_producer_records_in_total{") and own in k and
            'type="bad"' in k and v == 1 for k, v in m.items()))
        mine = {k.split('type="')[1].split('"')[0]: v for k, v in m.items()
                if k.startswith("insert_correlate_producer_records_in_total{") and own in k}
        check(mine == {"msg": 0, "qp": 0, "host": 0, "ignored": 1, "bad": 1},
              f"this producer's records: {mine}")
        check(not any(k.startswith("insert_correlate_producer_data_time_seconds{") and own in k
                      for k in m), "a data time for a producer that sent no data")
        producer.close()
        # A later record: the watermark passes the alerts, which end and are written.
        c.stream(trace2)
        m = c.wait_for("both alerts written",
                       lambda m: m.get('insert_correlate_alerts_total{kind="rkey_unknown"}') == 1 and
                       m.get('insert_correlate_alerts_total{kind="peer_mismatch"}') == 1)
        check(m.get('insert_correlate_alerts_firing{kind="rkey_unknown"}') == 0, "still firing")
    finally:
        rc = c.stop()
    check(rc == 0, f"insert-correlate exited {rc}: {''.join(c.err)}")
    kinds = sorted(json.loads(l)["kind"] for l in open(c.records) if '"type":"alert"' in l)
    check(kinds == ["peer_mismatch", "rkey_unknown"], f"alert records {kinds}")

    # Batch: --http changes nothing in the records; bad values and a port in use refused.
    dp, trace = fixture.write_inputs(tmp)
    plain, served = os.path.join(tmp, "plain.jsonl"), os.path.join(tmp, "served.jsonl")
    for out, extra in ((plain, []), (served, ["--http", "127.0.0.1:0"])):
        r = subprocess.run([CORRELATE, dp, trace, "--same-clock", "--records", out, "--quiet",
                            *extra], capture_output=True, text=True, timeout=60)
        check(r.returncode == 0 and r.stderr == "", f"batch {extra}: {r.returncode} {r.stderr}")

    def records(path):
        return sorted(l for l in open(path) if '"type":"summary"' not in l)

    check(records(plain) == records(served), "a batch run with --http wrote other records")
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    for value, needle in (("x", "--http x: expected ADDR:PORT"),
                          ("127.0.0.1:70000", "PORT must be a number"),
                          ("[::1]9", "expected [IPV6]:PORT"),
                          (f"127.0.0.1:{port}", f"--http 127.0.0.1:{port}: Address already in use")):
        r = subprocess.run([CORRELATE, dp, trace, "--quiet", "--http", value], capture_output=True,
                           text=True, timeout=60)
        lines = r.stderr.strip().splitlines()
        check(r.returncode == 2 and len(lines) == 1 and needle in lines[0],
              f"--http {value}: {r.returncode} {r.stderr!r}")
    busy.close()
    print("PASS metrics: counts, alerts fired then written, latency buckets, clocks, the page, "
          "404/HEAD; batch records unchanged; bad --http refused")


# What the open page says about itself: charts drawn, script errors, the alert table's text,
# and how it was loaded (navigate, or reload: it reloaded itself).
PAGE_STATE = """JSON.stringify({
  ready: document.body ? document.body.getAttribute('data-charts-ready') : null,
  expected: document.body ? document.body.getAttribute('data-charts-expected') : null,
  errors: document.documentElement.getAttribute('data-errors'),
  alerts: document.getElementById('alert-table') ?
      document.getElementById('alert-table').innerText : null,
  text: document.body ? document.body.innerText.indexOf('No alerts.') >= 0 : false,
  load: performance.getEntriesByType('navigation').map(function (e) { return e.type; })[0]
})"""


def case_page(tmp):
    dp1, trace1, dp2, trace2 = inputs(tmp)
    c = Correlator(tmp)
    browser = None
    try:
        c.stream(dp1, trace1)
        c.wait_for("340 e2e records", lambda m: m.get("insert_correlate_e2e_total") == 340)
        expected = {k: v for k, v in fixture.EXPECTED_CHARTS.items() if k != "chart-alerts"}
        t0 = time.monotonic()
        dom = chromium_check.check(c.url + "/#pause", expected)
        took = time.monotonic() - t0
        check("No alerts." in "".join(dom.text), "the page shows alerts before any attack")
        check(fixture.HOSTILE_HOST in "".join(dom.text) and "data-pwned" not in dom.body,
              "the hostile host name is not shown as text")

        browser = chromium_session.Browser()
        browser.open(c.url + "/")
        end = time.monotonic() + DEADLINE_S
        while True:
            state = json.loads(browser.evaluate(PAGE_STATE) or "{}")
            if state.get("ready") is not None and state.get("text"):
                break
            check(time.monotonic() < end, f"the open page never drew: {state}")
            time.sleep(0.2)
        c.stream(dp2, trace2)
        end = time.monotonic() + DEADLINE_S
        while True:
            state = json.loads(browser.evaluate(PAGE_STATE) or "{}")
            alerts = state.get("alerts") or ""
            if "rkey_unknown" in alerts and "peer_mismatch" in alerts and state.get("ready"):
                break
            check(time.monotonic() < end, f"the open page never showed the alerts: {state}")
            time.sleep(0.2)
        check(state["errors"] == "[]", f"script errors after reloading: {state['errors']}")
        check(state["ready"] == state["expected"], f"charts after reloading: {state}")
        check(state["load"] == "reload", f"the page was loaded by {state['load']}, not reloaded")
    finally:
        if browser:
            browser.close()
        rc = c.stop()
    check(rc == 0, f"insert-correlate exited {rc}: {''.join(c.err)}")
    print(f"PASS page: charts {expected} drawn (chromium {took:.1f} s), no alerts; the open page "
          "reloaded itself and its alert table shows rkey_unknown and peer_mismatch")


def main():
    case = sys.argv[1] if len(sys.argv) > 1 else ""
    fn = globals().get("case_" + case)
    if not fn:
        print(__doc__)
        return 2
    probe = subprocess.run([CORRELATE, "/dev/null", "--quiet", "--http", "127.0.0.1:0"],
                           capture_output=True, text=True, timeout=60)
    if "without libmicrohttpd" in probe.stderr:
        print(f"SKIP {case}: {probe.stderr.strip()}")
        return 77
    with tempfile.TemporaryDirectory(prefix="insert-http-") as tmp:
        try:
            fn(tmp)
        except (Failure, chromium_check.PageFailure) as e:
            print(f"FAIL {case}: {e}")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""A real Prometheus (Debian's `prometheus`) scraping both services' /metrics (--http;
docs/deploy.md "Metrics"), every second, on loopback ports, its storage in a temporary
directory - started here and stopped at the end.

insert-gen's `attacks` scenario (seed 41): its capture goes to `insert-dp monitor` through a
net_pcap port (--no-huge, --telemetry-prefix), its host traces and `insert-dp replay`'s
records of the same capture are streamed into `insert-correlate --listen` (one producer per
host and one for the observer, scripts/stream-records.py). Then PromQL through Prometheus's
HTTP API (/api/v1/query):

  up{job=...}                                         both targets up
  sum by (kind) (insert_correlate_alerts_fired_total) the alerts of insert-gen's truth, by kind
  sum(insert_correlate_alerts_total{kind="K"})        the alert records the run has written
  insert_correlate_e2e_total                          the truth's e2e count, and the e2e
                                                      records written
  sum(insert_correlate_latency_seconds_count{part="total"})  the e2e records with a total
  (and every family of both as docs/correlation.md and docs/live.md list them)
  insert_dp_frames_total                              the frames of the capture, and (as RoCE,
                                                      malformed, messages) what /insert/stats
                                                      says on the DPDK telemetry socket under
                                                      the fixed --telemetry-prefix

usage: prometheus_test.py"""
import collections
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("INSERT_SOURCE_ROOT", os.path.join(HERE, "..", ".."))
BUILD = os.environ.get("INSERT_BUILD_ROOT", os.path.join(SRC, "build"))
GEN = os.path.join(BUILD, "bench", "gen", "insert-gen")
DP = os.path.join(BUILD, "dataplane", "tools", "insert-dp")
CORRELATE = os.path.join(BUILD, "correlator", "insert-correlate")
STREAM = os.path.join(SRC, "scripts", "stream-records.py")
PROMETHEUS = os.environ.get("INSERT_PROMETHEUS", "/usr/bin/prometheus")
DEADLINE_S = 30
CONFIG = """global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: insert-correlate
    static_configs: [{{targets: ["127.0.0.1:{correlate}"]}}]
  - job_name: insert-dp
    static_configs: [{{targets: ["127.0.0.1:{dp}"]}}]
"""


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def wait_until(what, fn, procs):
    """fn() until it returns a true value (returned), within DEADLINE_S; every process in
    `procs` (name, Popen) must stay up meanwhile."""
    end = time.monotonic() + DEADLINE_S
    last = None
    while True:
        try:
            last = fn()
            if last:
                return last
        except (urllib.error.URLError, ConnectionError, OSError, ValueError):
            pass
        for name, p in procs:
            check(p.poll() is None, f"{name} exited {p.returncode} while waiting for {what}")
        check(time.monotonic() < end, f"{what}: not within {DEADLINE_S} s (last: {last})")
        time.sleep(0.2)


class Prometheus:
    def __init__(self, tmp, config):
        self.dir = os.path.join(tmp, "prometheus")
        os.mkdir(self.dir)
        with open(os.path.join(self.dir, "prometheus.yml"), "w") as f:
            f.write(config)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(os.path.join(self.dir, "prometheus.log"), "w")
        self.proc = subprocess.Popen(
            [PROMETHEUS, f"--config.file={self.dir}/prometheus.yml",
             f"--storage.tsdb.path={self.dir}/data", f"--web.listen-address=127.0.0.1:{self.port}",
             "--log.level=warn"], stdout=self.log, stderr=subprocess.STDOUT)

    def ready(self):
        wait_until("prometheus ready", lambda: "Ready" in get(self.url + "/-/ready"),
                   [("prometheus", self.proc)])

    def query(self, promql):
        """The instant vector: [(labels, value)]."""
        answer = json.loads(get(self.url + "/api/v1/query?" +
                                urllib.parse.urlencode({"query": promql})))
        check(answer["status"] == "success", f"{promql}: {answer}")
        return [(r["metric"], float(r["value"][1])) for r in answer["data"]["result"]]

    def scalar(self, promql):
        result = self.query(promql)
        return result[0][1] if len(result) == 1 else None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def tail(self):
        return open(os.path.join(self.dir, "prometheus.log")).read()[-1500:]


def generate(tmp):
    """insert-gen's attacks scenario: (capture, dataplane records, host files, truth)."""
    base = os.path.join(tmp, "attacks")
    subprocess.run([GEN, "--scenario", "attacks", "--seed", "41", "--out", base + ".pcap",
                    "--truth", base + ".truth.json", "--host-traces", base + ".hosts.jsonl",
                    "--e2e-truth", base + ".e2e.jsonl", "--quiet"], check=True,
                   stdout=subprocess.DEVNULL, timeout=60)
    subprocess.run([DP, "replay", base + ".pcap", "--quiet", "--records", base + ".dp.jsonl"],
                   check=True, stdout=subprocess.DEVNULL, timeout=60)
    per_host = collections.defaultdict(list)
    with open(base + ".hosts.jsonl") as f:
        for line in f:
            per_host[json.loads(line).get("host", "")].append(line)
    hosts = []
    for k, (_, lines) in enumerate(sorted(per_host.items())):
        hosts.append(f"{base}.host{k}.jsonl")
        with open(hosts[-1], "w") as f:
            f.writelines(lines)
    truth = {"alerts": collections.Counter(), "e2e": 0}
    with open(base + ".e2e.jsonl") as f:
        for line in f:
            r = json.loads(line)
            if r["type"] == "e2e_summary":
                truth["alerts"].update(r["alerts"])
                truth["e2e"] = r["e2e"]
    with open(base + ".truth.json") as f:
        truth["frames"] = json.load(f)["summary"]["pkts"]
    return base + ".pcap", base + ".dp.jsonl", hosts, truth


def written(path):
    """Record counts of the whole lines written so far: {type or alert:KIND: n}."""
    counts = collections.Counter()
    with open(path) as f:
        for line in f:
            if not line.endswith("\n"):
                break  # being written
            r = json.loads(line)
            counts[r["type"]] += 1
            if r["type"] == "alert":
                counts["alert:" + r["kind"]] += 1
            if r["type"] == "e2e" and r.get("total_ns") is not None:
                counts["e2e_total"] += 1
    return counts


def telemetry(prefix, command):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect(f"/var/run/dpdk/{prefix}/dpdk_telemetry.v2")
        s.recv(4096)
        s.send(command.encode())
        return json.loads(s.recv(1 << 16))[command]
    finally:
        s.close()


def run(tmp):
    check(os.path.exists(PROMETHEUS), f"{PROMETHEUS} not installed (scripts/setup.sh)")
    pcap, dp_records, hosts, truth = generate(tmp)
    ports = {"correlate": free_port(), "dp": free_port()}
    sock = os.path.join(tmp, "c.sock")
    records = os.path.join(tmp, "live.jsonl")
    prefix = f"insert-prometheus-test-{os.getpid()}"
    procs = []
    prometheus = None
    logs = {}

    def log(name):
        logs[name] = open(os.path.join(tmp, name + ".log"), "w")
        return logs[name]

    try:
        # --ttl 2: messages no work request matched are decided 2 s of data behind the
        # watermark, so that injected_message fires before the run ends.
        correlate = subprocess.Popen(
            [CORRELATE, "--listen", sock, "--same-clock", "--records", records, "--quiet",
             "--http", f"127.0.0.1:{ports['correlate']}", "--interval", "0.5", "--max-delay", "0.5",
             "--ttl", "2"], stdout=subprocess.DEVNULL, stderr=log("insert-correlate"))
        procs.append(("insert-correlate", correlate))
        dp = subprocess.Popen(
            [DP, "monitor", "--vdev", f"net_pcap0,rx_pcap={pcap}", "--max-endpoints", "4096",
             "--quiet", "--http", f"127.0.0.1:{ports['dp']}", "--telemetry-prefix", prefix,
             "--", "--no-huge"], stdout=subprocess.DEVNULL, stderr=log("insert-dp"))
        procs.append(("insert-dp monitor", dp))
        prometheus = Prometheus(tmp, CONFIG.format(**ports))
        procs.append(("prometheus", prometheus.proc))
        prometheus.ready()
        wait_until("the --listen socket", lambda: os.path.exists(sock), procs)
        subprocess.run([sys.executable, STREAM, sock, dp_records, *hosts, "--speed", "0"],
                       check=True, timeout=60)

        wait_until("both targets up", lambda: {m["job"]: v for m, v in prometheus.query("up")} ==
                   {"insert-correlate": 1.0, "insert-dp": 1.0}, procs)
        # Every alert of the truth fired, by kind.
        want = {k: float(n) for k, n in truth["alerts"].items()}
        fired = wait_until(
            "the truth's alerts fired",
            lambda: (lambda got: got if got == want else None)(
                {m["kind"]: v for m, v in
                 prometheus.query("sum by (kind) (insert_correlate_alerts_fired_total)")}),
            procs)
        # The e2e records, the alert records written and the latency histograms' counts
        # equal what the run has written (the same moment: both stay put once the streams
        # are quiet).
        seen = {}

        def agrees():
            w = written(records)
            got = {
                "e2e": prometheus.scalar("insert_correlate_e2e_total"),
                "rkey_unknown": prometheus.scalar(
                    'sum(insert_correlate_alerts_total{kind="rkey_unknown"})'),
                "alerts": prometheus.scalar("sum(insert_correlate_alerts_total)"),
                "e2e_total": prometheus.scalar(
                    'sum(insert_correlate_latency_seconds_count{part="total"})'),
            }
            expect = {"e2e": w["e2e"], "rkey_unknown": w["alert:rkey_unknown"],
                      "alerts": w["alert"], "e2e_total": w["e2e_total"]}
            seen.update(prometheus=got, records=expect)
            return (got, expect) if got == expect and w["e2e"] == truth["e2e"] else None

        try:
            got, _ = wait_until("the records written and Prometheus agreeing", agrees, procs)
        except Failure as e:
            raise Failure(f"{e}: {seen}")
        # The dataplane: every frame of the capture, all RoCE; DPDK telemetry says the same.
        frames = wait_until(
            "insert_dp_frames_total", lambda: (lambda v: v if v == truth["frames"] else None)(
                prometheus.scalar("insert_dp_frames_total")), procs)
        # Every frame is RoCE or malformed: the capture's 68 frames above 2048 bytes arrive
        # from net_pcap cut to one mbuf (--vdev ports get DPDK's default mbuf size) and are
        # counted as length_mismatch; `insert-dp replay` reads them whole.
        for promql in ('sum(insert_dp_port_frames_total{direction="rx"})',
                       "sum(insert_dp_roce_frames_total) + sum(insert_dp_malformed_frames_total)"):
            value = prometheus.scalar(promql)
            check(value == truth["frames"], f"{promql} = {value}, not {truth['frames']}")
        # Every family as docs/live.md's table lists it (name and type).
        exposed = {}
        for line in get(f"http://127.0.0.1:{ports['dp']}/metrics").splitlines():
            if line.startswith("# TYPE "):
                exposed[line.split()[2]] = line.split()[3]
        table = open(os.path.join(SRC, "docs", "live.md")).read()
        table = table.split("<!-- dp metrics: begin -->")[1].split("<!-- dp metrics: end -->")[0]
        listed = {m.group(1): m.group(2)
                  for m in re.finditer(r"^\| `(\w+)` \| (\w+) \|", table, re.M)}
        check(exposed == listed, f"insert-dp's families {exposed} differ from docs/live.md's")
        stats = telemetry(prefix, "/insert/stats")
        promql = {"frames": "insert_dp_frames_total", "roce_pkts": "insert_dp_roce_frames_total",
                  "malformed_pkts": "sum(insert_dp_malformed_frames_total)",
                  "msgs": "insert_dp_messages_total"}
        same = {k: (stats[k], prometheus.scalar(q)) for k, q in promql.items()}
        check(stats["frames"] == truth["frames"] and all(a == b for a, b in same.values()),
              f"/insert/stats under --telemetry-prefix {prefix} and Prometheus: {same}")
        quantile = prometheus.scalar('histogram_quantile(0.5, sum by (le) '
                                     '(insert_correlate_latency_seconds_bucket{part="total"}))')
        check(quantile is not None and 0 < quantile < 10, f"median total latency {quantile}")
    except Failure as e:
        tails = [prometheus.tail()] if prometheus else []
        for name, f in logs.items():
            f.flush()
            tails.append(f"{name}: {open(f.name).read()[-1000:]}")
        raise Failure(f"{e} {' | '.join(tails)}")
    finally:
        for name, p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for name, p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if prometheus:
            prometheus.stop()
        for f in logs.values():
            f.close()
    check(correlate.returncode == 0 and dp.returncode == 0,
          f"exit status: insert-correlate {correlate.returncode}, insert-dp {dp.returncode}")
    final = written(records)
    check(final["alert"] == sum(truth["alerts"].values()), f"final alert records {final}")
    check(not os.path.exists(f"/var/run/dpdk/{prefix}"), "the telemetry directory was left")
    print(f"PASS: Prometheus scraped both; alerts fired by kind = the truth {dict(fired)}; "
          f"written {got}; insert_dp_frames_total {frames:.0f} = the capture's frames = "
          f"/insert/stats; median total latency {quantile * 1e6:.1f} us")


def main():
    if os.geteuid() != 0:
        print("SKIP: insert-dp monitor and /var/run/dpdk need root")
        return 77
    with tempfile.TemporaryDirectory(prefix="insert-prometheus-") as tmp:
        try:
            run(tmp)
        except Failure as e:
            print(f"FAIL: {e}")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

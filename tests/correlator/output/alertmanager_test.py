#!/usr/bin/env python3
"""insert-correlate --alertmanager against a real Prometheus Alertmanager (Debian's
prometheus-alertmanager, started here on a free localhost port with a minimal
configuration, gossip off), on the fixed records of tests/correlator/report/fixture.py
that raise exactly two alerts, both naming the server (pid 300) as the victim:

  deliver       GET /api/v2/alerts returns exactly insert_rkey_unknown and
                insert_peer_mismatch with their labels (victim and source address, QPN,
                pid, comm, cgroup), startsAt = the alert's t_ns, the record as an
                annotation; summary.alertmanager = {sent 2, failed 0}
  unreachable   nothing listens on the port: the run still writes its records, counts the
                alerts in summary.alertmanager.failed, says so in one stderr line, exits 0

The Alertmanager is stopped (and its directory removed) whatever happens.
usage: alertmanager_test.py CASE"""
import datetime
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "report"))
import fixture  # noqa: E402

SRC = os.environ.get("INSERT_SOURCE_ROOT", os.path.join(HERE, "..", "..", ".."))
BUILD = os.environ.get("INSERT_BUILD_ROOT", os.path.join(SRC, "build"))
CORRELATE = os.path.join(BUILD, "correlator", "insert-correlate")
ALERTMANAGER = os.environ.get("INSERT_ALERTMANAGER", "/usr/bin/prometheus-alertmanager")
CONFIG = """route:
  receiver: none
  group_wait: 1h
receivers:
  - name: none
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


class Alertmanager:
    def __init__(self, tmp):
        self.dir = os.path.join(tmp, "am")
        os.mkdir(self.dir)
        with open(os.path.join(self.dir, "am.yml"), "w") as f:
            f.write(CONFIG)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(os.path.join(self.dir, "am.log"), "w")
        self.proc = None

    def __enter__(self):
        check(os.path.exists(ALERTMANAGER), f"{ALERTMANAGER} not installed (scripts/setup.sh)")
        self.proc = subprocess.Popen(
            [ALERTMANAGER, f"--config.file={self.dir}/am.yml", f"--storage.path={self.dir}/data",
             f"--web.listen-address=127.0.0.1:{self.port}", "--cluster.listen-address="],
            stdout=self.log, stderr=subprocess.STDOUT)
        end = time.monotonic() + 20
        while time.monotonic() < end:
            check(self.proc.poll() is None, f"alertmanager exited {self.proc.returncode}: {self.tail()}")
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=1) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.1)
        raise Failure(f"alertmanager not ready within 20 s: {self.tail()}")

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def tail(self):
        self.log.flush()
        return open(os.path.join(self.dir, "am.log")).read()[-1500:]

    def alerts(self):
        with urllib.request.urlopen(self.url + "/api/v2/alerts", timeout=5) as r:
            return json.loads(r.read())


def correlate(tmp, url):
    dp, trace = fixture.write_inputs(tmp)
    records = os.path.join(tmp, "c.jsonl")
    r = subprocess.run([CORRELATE, dp, trace, "--same-clock", "--records", records, "--quiet",
                        "--alertmanager", url], capture_output=True, text=True, timeout=60)
    recs = [json.loads(l) for l in open(records)] if os.path.exists(records) else []
    return r, recs


def rfc3339_ms(ns):
    """As the Alertmanager's API writes times: milliseconds, UTC."""
    t = datetime.datetime.fromtimestamp(ns // 10**9, datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + f".{ns // 10**6 % 1000:03d}Z"


ATTACK_T = fixture.T0 + 500 * 10**6
VICTIM = {"victim_ip": "10.0.0.2", "victim_qpn": "50", "victim_pid": "300", "victim_comm": "server",
          "victim_cgroup": "9", "source_ip": "10.0.0.9"}


def case_deliver(tmp):
    with Alertmanager(tmp) as am:
        r, recs = correlate(tmp, am.url)
        check(r.returncode == 0 and r.stderr == "", f"insert-correlate: {r.returncode} {r.stderr!r}")
        summary = next(x for x in recs if x["type"] == "summary")
        check(summary["alertmanager"] == {"sent": 2, "failed": 0}, f"summary {summary['alertmanager']}")
        got = am.alerts()
    check(len(got) == 2, f"{len(got)} alerts in the Alertmanager: {got}")
    by_name = {a["labels"]["alertname"]: a for a in got}
    check(sorted(by_name) == ["insert_peer_mismatch", "insert_rkey_unknown"], f"alertnames {sorted(by_name)}")
    for kind, severity in (("rkey_unknown", "warning"), ("peer_mismatch", "critical")):
        a = by_name["insert_" + kind]
        # Alertmanager drops labels with empty values: the untraced source has no pid label.
        want = dict(VICTIM, alertname="insert_" + kind, kind=kind, severity=severity)
        check(a["labels"] == want, f"{kind} labels {a['labels']} != {want}")
        check(a["startsAt"] == rfc3339_ms(ATTACK_T),
              f"{kind} startsAt {a['startsAt']}, alert t_ns {ATTACK_T}")
        rec = json.loads(a["annotations"]["record"])
        check(rec["type"] == "alert" and rec["kind"] == kind and rec["t_ns"] == ATTACK_T and
              rec["victim"]["pid"] == 300, f"{kind} record annotation {rec}")
        check(a["annotations"]["summary"].startswith(kind + ": 1 message(s) from 10.0.0.9"),
              f"{kind} summary {a['annotations']['summary']!r}")
        check(a["status"]["state"] == "active", f"{kind} state {a['status']}")
    print("PASS deliver: the Alertmanager holds exactly insert_rkey_unknown and insert_peer_mismatch "
          "for victim pid 300")


def case_unreachable(tmp):
    port = free_port()  # bound and released: nothing listens there
    r, recs = correlate(tmp, f"http://127.0.0.1:{port}")
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr!r}")
    lines = r.stderr.strip().splitlines()
    check(len(lines) == 1 and lines[0].startswith(f"insert-correlate: alertmanager: 127.0.0.1:{port}: ")
          and "refused" in lines[0], f"stderr {r.stderr!r}")
    summary = next(x for x in recs if x["type"] == "summary")
    check(summary["alertmanager"] == {"sent": 0, "failed": 2}, f"summary {summary['alertmanager']}")
    check(sum(x["type"] == "alert" for x in recs) == 2 and sum(x["type"] == "e2e" for x in recs) == 340,
          "the records were not all written")
    print(f"PASS unreachable: records written, 2 alerts counted failed, one line: {lines[0]}")


def main():
    case = sys.argv[1] if len(sys.argv) > 1 else ""
    fn = globals().get("case_" + case)
    if not fn:
        print(__doc__)
        return 2
    with tempfile.TemporaryDirectory(prefix="insert-am-") as tmp:
        try:
            fn(tmp)
        except Failure as e:
            print(f"FAIL {case}: {e}")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

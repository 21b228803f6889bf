#!/usr/bin/env python3
"""insert-correlate --alertmanager against a real Prometheus Alertmanager (Debian's
prometheus-alertmanager, started here on a free localhost port with a minimal
configuration, gossip off), on the fixed records of tests/correlator/report/fixture.py
that raise exactly two alerts, both naming the server (pid 300) as the victim, and one
congestion episode at hB:

  deliver       GET /api/v2/alerts returns exactly insert_rkey_unknown and
                insert_peer_mismatch with their labels (victim and source address, QPN,
                pid, comm, cgroup), startsAt = the alert's t_ns, the record as an
                annotation; the episode (in the past: endsAt passed) arrived resolved -
                the Alertmanager's alertmanager_alerts_received_total says 2 firing and 1
                resolved - and is not listed; summary.alertmanager = {sent 3, failed 0,
                rejected 0, dropped 0, retries 0}
  unreachable   nothing listens on the port: the run still writes its records, retries
                for --alertmanager-wait (default 5 s), says so in one stderr line and the
                loss in another, counts the 3 alerts as dropped (failed), exits 0
  late          the Alertmanager starts only after the correlator found it unreachable:
                the retries deliver all 3 once it is up (one line said unreachable, one
                reachable again); with the records' times 10 minutes ahead the episode is
                still listed, as insert_congestion with its node and startsAt/endsAt =
                the record's t_start_ns/t_end_ns
  live          the same records streamed into `--listen` (one producer each for the
                observer and the host): both alerts are listed by the Alertmanager while the
                run still goes on, within --max-delay + --interval + 2 s of the last record
                sent, each logged on stderr as it fired ("ALERT ... (firing)")
  https         the Alertmanager serves TLS with a self-signed certificate for 127.0.0.1:
                https://... with --alertmanager-ca CERT delivers; without it the
                certificate is refused, retried, and the alerts counted dropped

The Alertmanager is stopped (and its directory removed) whatever happens.
usage: alertmanager_test.py CASE"""
import datetime
import json
import os
import socket
import subprocess
import sys
import ssl
import tempfile
import threading
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
# Alerts without endsAt (the security alerts) stay firing this long after their POST; the
# late case's alerts start 10 minutes ahead, and an endsAt before startsAt is refused.
LONG_RESOLVE = "global:\n  resolve_timeout: 1h\n"


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
    """`port`: listen there (default: a free one); `tls`: (cert, key) files to serve https
    with; `config`: prepended to the minimal configuration."""

    def __init__(self, tmp, port=None, tls=None, config=""):
        self.dir = os.path.join(tmp, "am")
        os.mkdir(self.dir)
        with open(os.path.join(self.dir, "am.yml"), "w") as f:
            f.write(config + CONFIG)
        self.port = port or free_port()
        self.tls = tls
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.context = ssl.create_default_context(cafile=tls[0]) if tls else None
        self.log = open(os.path.join(self.dir, "am.log"), "w")
        self.proc = None

    def __enter__(self):
        check(os.path.exists(ALERTMANAGER), f"{ALERTMANAGER} not installed (scripts/setup.sh)")
        args = [ALERTMANAGER, f"--config.file={self.dir}/am.yml", f"--storage.path={self.dir}/data",
                f"--web.listen-address=127.0.0.1:{self.port}", "--cluster.listen-address="]
        if self.tls:
            with open(os.path.join(self.dir, "web.yml"), "w") as f:
                f.write(f"tls_server_config:\n  cert_file: {self.tls[0]}\n  key_file: {self.tls[1]}\n")
            args.append(f"--web.config.file={self.dir}/web.yml")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        end = time.monotonic() + 20
        while time.monotonic() < end:
            check(self.proc.poll() is None, f"alertmanager exited {self.proc.returncode}: {self.tail()}")
            try:
                with self.get("/-/ready", timeout=1) as r:
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

    def get(self, path, timeout=5):
        return urllib.request.urlopen(self.url + path, timeout=timeout, context=self.context)

    def tail(self):
        self.log.flush()
        return open(os.path.join(self.dir, "am.log")).read()[-1500:]

    def alerts(self):
        """The alerts listed: active, silenced and inhibited alike (not those whose endsAt
        has passed: the API never lists resolved alerts)."""
        with self.get("/api/v2/alerts?active=true&silenced=true&inhibited=true&unprocessed=true") as r:
            return json.loads(r.read())

    def received(self):
        """alertmanager_alerts_received_total by status (firing, resolved)."""
        counts = {}
        with self.get("/metrics") as r:
            for line in r.read().decode().splitlines():
                if line.startswith("alertmanager_alerts_received_total{"):
                    status = line.split('status="')[1].split('"')[0]
                    counts[status] = counts.get(status, 0) + int(float(line.split()[-1]))
        return counts


def correlate(tmp, url, *extra):
    dp, trace = fixture.write_inputs(tmp)
    records = os.path.join(tmp, "c.jsonl")
    r = subprocess.run([CORRELATE, dp, trace, "--same-clock", "--records", records, "--quiet",
                        "--alertmanager", url, *extra], capture_output=True, text=True, timeout=60)
    recs = [json.loads(line) for line in open(records)] if os.path.exists(records) else []
    return r, recs


def by_type(recs, kind):
    return [x for x in recs if x["type"] == kind]


def rfc3339_ms(ns):
    """As the Alertmanager's API writes times: milliseconds, UTC."""
    t = datetime.datetime.fromtimestamp(ns // 10**9, datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + f".{ns // 10**6 % 1000:03d}Z"


VICTIM = {"victim_ip": "10.0.0.2", "victim_qpn": "50", "victim_pid": "300", "victim_comm": "server",
          "victim_cgroup": "9", "source_ip": "10.0.0.9"}
DELIVERED = {"sent": 3, "failed": 0, "rejected": 0, "dropped": 0, "retries": 0}


def check_security(by_name):
    """The two security alerts as the Alertmanager lists them."""
    attack_t = fixture.T0 + 500 * 10**6
    for kind, severity in (("rkey_unknown", "warning"), ("peer_mismatch", "critical")):
        a = by_name["insert_" + kind]
        # Alertmanager drops labels with empty values: the untraced source has no pid label.
        want = dict(VICTIM, alertname="insert_" + kind, kind=kind, severity=severity)
        check(a["labels"] == want, f"{kind} labels {a['labels']} != {want}")
        check(a["startsAt"] == rfc3339_ms(attack_t),
              f"{kind} startsAt {a['startsAt']}, alert t_ns {attack_t}")
        rec = json.loads(a["annotations"]["record"])
        check(rec["type"] == "alert" and rec["kind"] == kind and rec["t_ns"] == attack_t and
              rec["victim"]["pid"] == 300, f"{kind} record annotation {rec}")
        # An untraced source only claims its address (SPEC 10 v1.3 source.claimed).
        check(a["annotations"]["summary"].startswith(
            kind + ": 1 message(s) from claimed source 10.0.0.9 (untraced, possibly spoofed)"),
              f"{kind} summary {a['annotations']['summary']!r}")
        check(rec["source"]["claimed"] is True, f"{kind} source {rec['source']}")
        check(a["status"]["state"] == "active", f"{kind} state {a['status']}")


def case_deliver(tmp):
    with Alertmanager(tmp) as am:
        r, recs = correlate(tmp, am.url)
        check(r.returncode == 0 and r.stderr == "", f"insert-correlate: {r.returncode} {r.stderr!r}")
        summary = by_type(recs, "summary")[0]
        check(summary["alertmanager"] == DELIVERED, f"summary {summary['alertmanager']}")
        check(len(by_type(recs, "congestion")) == 1, "not one congestion episode")
        got = am.alerts()
        received = am.received()
    check(len(got) == 2, f"{len(got)} alerts in the Alertmanager: {got}")
    by_name = {a["labels"]["alertname"]: a for a in got}
    check(sorted(by_name) == ["insert_peer_mismatch", "insert_rkey_unknown"], f"alertnames {sorted(by_name)}")
    check_security(by_name)
    check(received == {"firing": 2, "resolved": 1}, f"alerts received {received}")
    print("PASS deliver: the Alertmanager holds exactly insert_rkey_unknown and insert_peer_mismatch "
          "for victim pid 300, and received the congestion episode resolved")


def case_unreachable(tmp):
    port = free_port()  # bound and released: nothing listens there
    start = time.monotonic()
    r, recs = correlate(tmp, f"http://127.0.0.1:{port}")
    took = time.monotonic() - start
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr!r}")
    lines = r.stderr.strip().splitlines()
    check(len(lines) == 2 and lines[0].startswith(f"insert-correlate: alertmanager: http://127.0.0.1:{port} "
                                                  "unreachable (")
          and "refused" in lines[0] and lines[0].endswith(", retrying (3 alert(s) queued)"),
          f"stderr {r.stderr!r}")
    check(lines[1].startswith(f"insert-correlate: alertmanager: 3 alert(s) not delivered to "
                              f"http://127.0.0.1:{port} in time (last: unreachable (")
          and lines[1].endswith("), dropped"), f"stderr {r.stderr!r}")
    summary = by_type(recs, "summary")[0]
    delivery = dict(summary["alertmanager"])
    retries = delivery.pop("retries")
    check(delivery == {"sent": 0, "failed": 3, "rejected": 0, "dropped": 3} and retries >= 3,
          f"summary {summary['alertmanager']}")
    check(len(by_type(recs, "alert")) == 2 and len(by_type(recs, "e2e")) == 340,
          "the records were not all written")
    check(4.5 < took < 30, f"the run took {took:.1f} s: not the 5 s of --alertmanager-wait")
    print(f"PASS unreachable: records written, 3 alerts dropped after {retries} retries in {took:.1f} s, "
          f"two lines: {lines[0]!r}, {lines[1]!r}")


def case_late(tmp):
    # The records 10 minutes ahead (a whole second, as the fixture needs), so that the
    # episode's endsAt has not passed when the Alertmanager is asked.
    fixture.T0 = (time.time_ns() // 10**9 + 600) * 10**9
    dp, trace = fixture.write_inputs(tmp)
    records = os.path.join(tmp, "c.jsonl")
    port = free_port()
    proc = subprocess.Popen([CORRELATE, dp, trace, "--same-clock", "--records", records, "--quiet",
                             "--alertmanager", f"http://127.0.0.1:{port}", "--alertmanager-wait", "90"],
                            stderr=subprocess.PIPE, text=True)
    lines, arrived = [], threading.Event()

    def read_stderr():
        for line in proc.stderr:
            lines.append(line.rstrip("\n"))
            arrived.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        check(arrived.wait(30), "no stderr line saying the Alertmanager is unreachable")
        check(" unreachable (" in lines[0], f"first line {lines[0]!r}")
        with Alertmanager(tmp, port=port, config=LONG_RESOLVE) as am:
            proc.wait(timeout=120)
            reader.join(10)
            check(proc.returncode == 0, f"exit {proc.returncode}: {lines}")
            got = am.alerts()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    check(len(lines) == 2 and lines[1].startswith(f"insert-correlate: alertmanager: http://127.0.0.1:{port} "
                                                  "reachable again ("), f"stderr {lines}")
    recs = [json.loads(line) for line in open(records)]
    summary = by_type(recs, "summary")[0]
    delivery = dict(summary["alertmanager"])
    retries = delivery.pop("retries")
    check(delivery == {"sent": 3, "failed": 0, "rejected": 0, "dropped": 0} and retries >= 1,
          f"summary {summary['alertmanager']}")
    by_name = {a["labels"]["alertname"]: a for a in got}
    check(len(got) == 3 and sorted(by_name) == ["insert_congestion", "insert_peer_mismatch",
                                                "insert_rkey_unknown"], f"alerts {got}")
    check_security(by_name)
    episode = by_type(recs, "congestion")[0]
    c = by_name["insert_congestion"]
    want = {"alertname": "insert_congestion", "kind": "congestion", "severity": "warning", "node": "hB"}
    check(c["labels"] == want, f"congestion labels {c['labels']} != {want}")
    check(c["startsAt"] == rfc3339_ms(episode["t_start_ns"]) and c["endsAt"] == rfc3339_ms(episode["t_end_ns"]),
          f"congestion {c['startsAt']} .. {c['endsAt']}, episode {episode['t_start_ns']} .. {episode['t_end_ns']}")
    check(json.loads(c["annotations"]["record"]) == episode, "the record annotation is not the episode")
    check(c["annotations"]["summary"].startswith("congestion at hB: "), f"summary {c['annotations']['summary']!r}")
    print(f"PASS late: delivered after {retries} retries once the Alertmanager was up; the episode "
          f"listed with startsAt {c['startsAt']} and endsAt {c['endsAt']}")


def case_https(tmp):
    cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
    r = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-keyout", key, "-out", cert, "-subj", "/CN=127.0.0.1",
                        "-addext", "subjectAltName=IP:127.0.0.1"], capture_output=True, text=True)
    check(r.returncode == 0, f"openssl: {r.stderr}")
    with Alertmanager(tmp, tls=(cert, key)) as am:
        check(am.url.startswith("https://"), am.url)
        r, recs = correlate(tmp, am.url, "--alertmanager-ca", cert)
        check(r.returncode == 0 and r.stderr == "", f"insert-correlate: {r.returncode} {r.stderr!r}")
        summary = by_type(recs, "summary")[0]
        check(summary["alertmanager"] == DELIVERED, f"summary {summary['alertmanager']}")
        check(len(am.alerts()) == 2, "the Alertmanager does not hold the two alerts")
        # Without the CA: the system's bundle does not trust the certificate.
        r, recs = correlate(tmp, am.url, "--alertmanager-wait", "1")
        check(r.returncode == 0 and "certificate" in r.stderr, f"insert-correlate: {r.returncode} {r.stderr!r}")
        summary = by_type(recs, "summary")[0]
        check(summary["alertmanager"]["dropped"] == 3 and summary["alertmanager"]["sent"] == 0,
              f"summary {summary['alertmanager']}")
    print("PASS https: delivered over TLS with --alertmanager-ca; refused without it: "
          + r.stderr.splitlines()[0])


def case_live(tmp):
    dp, trace = fixture.write_inputs(tmp)
    sock = os.path.join(tmp, "c.sock")
    records = os.path.join(tmp, "live.jsonl")
    with Alertmanager(tmp) as am:
        proc = subprocess.Popen([CORRELATE, "--listen", sock, "--same-clock", "--records", records,
                                 "--alertmanager", am.url, "--max-delay", "1", "--interval", "1"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            end = time.monotonic() + 10
            while not os.path.exists(sock):
                check(time.monotonic() < end and proc.poll() is None, "--listen did not start")
                time.sleep(0.05)
            stream = os.path.join(SRC, "scripts", "stream-records.py")
            subprocess.run([sys.executable, stream, sock, dp, trace, "--speed", "0"], check=True,
                           timeout=60)
            sent = time.monotonic()
            names = set()
            while time.monotonic() < sent + 1 + 1 + 2 and len(names) < 2:
                names = {a["labels"]["alertname"] for a in am.alerts()}
                time.sleep(0.1)
            delay = time.monotonic() - sent
            check(proc.poll() is None, "the run ended before its alerts were delivered")
            check(names == {"insert_rkey_unknown", "insert_peer_mismatch"},
                  f"after {delay:.1f} s the Alertmanager lists {sorted(names)}")
            check_security({a["labels"]["alertname"]: a for a in am.alerts()})
        finally:
            proc.terminate()
            _, err = proc.communicate(timeout=30)
    firing = [line for line in err.splitlines() if line.endswith("(firing)")]
    check(len(firing) == 2 and all("ALERT " in line for line in firing), f"stderr: {err!r}")
    check(proc.returncode == 0, f"insert-correlate exited {proc.returncode}: {err!r}")
    print(f"PASS live: both alerts listed by the Alertmanager {delay:.1f} s after the last record "
          "was sent, while the run went on")


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

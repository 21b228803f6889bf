#!/usr/bin/env python3
"""The cluster demo's helpers (scripts/demo.sh, docs/demo.md).

demo-workload.py OUT_DIR
    Writes workload.json, the ground truth of a run: which pid ran which tool in which role
    on which host and address, what perftest printed about its QP (QPN, PSN, rkey, VA, as
    exchanged with its peer), which processes formed the traffic pairs, the incast and the
    attacks, and what each attack should raise (SPEC.md section 10). Reads
    OUT_DIR/logs/procs.tsv, phases.tsv, meta.tsv, the processes' logs and
    OUT_DIR/attacks.jsonl.

demo-workload.py tee UPSTREAM SOCKET=FILE...
    The producers' records both to the live correlator and to files: listens on each SOCKET
    (a producer's `--records unix:SOCKET` or `--unix SOCKET`), appends what a connection
    sends to FILE and forwards it, as it comes, on a connection of its own to UPSTREAM
    (insert-correlate --listen UPSTREAM): the correlator sees one stream per producer, as
    if it were connected directly. SIGTERM: stops accepting, reads every connection to its
    end, forwards the rest, closes the upstream connections and waits (10 s at most) until
    the correlator has closed each one - which it does once it has read it to its end -
    then exits 0: every record sent was read.

demo-workload.py watch-alertmanager URL OUT_FILE T0_NS
    Polls the Alertmanager's GET /api/v2/alerts every 100 ms and writes a JSON line to
    OUT_FILE when an alert is first listed (`seen_ns`: CLOCK_REALTIME when the answer that
    listed it arrived), when a listed security alert's `record` annotation is first another
    alert of the correlator's (`again`: the same labels, a new `t_ns`) and when it is no
    longer listed (`gone_ns`), and a progress line on stdout for each (seconds since T0_NS).
    SIGTERM: one last poll, then exit.

demo-workload.py alert-delays OUT_DIR
    For every security alert of the live correlator (correlated.jsonl), the attack that sent
    the message its evidence names (attacks.jsonl: source and victim addresses, victim QPN,
    a PSN the attacker sent), that attack's first packet at insert-dp (the earliest
    t_first_ns of its messages in dp.jsonl), the time the correlator told the alert on
    stderr (logs/insert-correlate-times.tsv), the time the Alertmanager first listed it
    (logs/alertmanager.jsonl, when the demo had one) and the delays: one line each on
    stdout, and OUT_DIR/alert-delays.jsonl. Exit 1 when an attack has no alert listed (told,
    without an Alertmanager).

demo-workload.py latency OUT_DIR
    The latency application's story, from the correlator's records (correlated.jsonl) and
    insert-dp's (dp.jsonl): its network latency per message before the incast, while the
    incast was on the wire (its senders' first packet to their last acknowledgement at
    insert-dp) and after it, its completion time and signaled requests, and what the
    congestion episode toward the incast's host says of it: lines on stdout and
    OUT_DIR/latency.json. Exit 1 when a part is missing.
"""
import json
import math
import os
import re
import selectors
import signal
import socket
import sys
import time
import urllib.error
import urllib.request

# perftest's description of a QP: "local address: LID 0000 QPN 0x290100 PSN 0x6d28e6
# RKey 0x0001b7 VAddr 0x005559bcd36000" (RKey/VAddr for RDMA tests only), and the next
# line's "GID: ...:255:255:10:88:00:02" for its address.
ADDR_RE = re.compile(r"(local|remote) address: LID \S+ QPN (0x[0-9a-f]+) PSN (0x[0-9a-f]+)"
                     r"(?:.*?RKey (0x[0-9a-f]+))?(?:.*?VAddr (0x[0-9a-f]+))?")
GID_RE = re.compile(r"GID: ((?:\d+:){15}\d+)")


def qpn_text(qpn):
    """A QPN as people read it (perftest, tshark): hex; '?' when unknown."""
    try:
        return f"0x{int(qpn):06x}"
    except (TypeError, ValueError):
        return "?"


def psn_text(psn):
    """A PSN as the demo's lines print it: hex; '?' when unknown."""
    return f"{psn:#x}" if isinstance(psn, int) else "?"


def read_tsv(path, columns):
    rows = []
    with open(path) as f:
        for line in f:
            cells = line.rstrip("\n").split("\t")
            rows.append(dict(zip(columns, cells)))
    return rows


def perftest_addresses(log_path):
    """{'local': {...}, 'remote': {...}} from a perftest log, or {} if it printed none."""
    out = {}
    try:
        lines = open(log_path, errors="replace").read().splitlines()
    except FileNotFoundError:
        return out
    for i, line in enumerate(lines):
        m = ADDR_RE.search(line)
        if not m:
            continue
        side = {"qpn": int(m.group(2), 16), "psn": int(m.group(3), 16)}
        if m.group(4):
            side["rkey"] = int(m.group(4), 16)
        if m.group(5):
            side["va"] = int(m.group(5), 16)
        if i + 1 < len(lines):
            g = GID_RE.search(lines[i + 1])
            if g:
                b = [int(x) for x in g.group(1).split(":")]
                side["ip"] = ".".join(str(x) for x in b[12:16])
        out.setdefault(m.group(1), side)
    return out


def as_int(text):
    return int(text) if text not in ("", "-") else None


def write_workload(out_dir):
    logs = os.path.join(out_dir, "logs")
    meta = {r["key"]: r["value"] for r in read_tsv(os.path.join(logs, "meta.tsv"), ["key", "value"])}
    procs = read_tsv(os.path.join(logs, "procs.tsv"),
                     ["key", "pid", "tool", "role", "host", "ip", "peer_ip", "port", "phase",
                      "group", "target", "t_start_ns", "t_end_ns", "exit_status", "env", "args", "tenant"])
    phases = read_tsv(os.path.join(logs, "phases.tsv"), ["name", "t_start_ns", "t_end_ns"])
    attacks = []
    attacks_path = os.path.join(out_dir, "attacks.jsonl")
    if os.path.exists(attacks_path):
        attacks = [json.loads(l) for l in open(attacks_path) if l.strip()]

    processes = []
    for p in procs:
        rec = {
            "key": p["key"],
            "pid": int(p["pid"]),
            "comm": os.path.basename(p["tool"])[:15],  # the kernel's comm: 15 characters
            "tool": os.path.basename(p["tool"]),
            "role": p["role"],
            "host": p["host"],
            "ip": p["ip"],
            "peer_ip": p["peer_ip"] or None,
            "port": as_int(p["port"]),
            "phase": p["phase"],
            "group": p["group"],
            "target": p["target"] or None,
            "env": dict(kv.split("=", 1) for kv in p["env"].split() if "=" in kv),
            "args": p["args"],
            "t_start_ns": as_int(p["t_start_ns"]),
            "t_end_ns": as_int(p["t_end_ns"]),
            "exit_status": as_int(p["exit_status"]),
            "log": os.path.join("logs", p["key"] + ".log"),
            # Each host namespace has its own tracer: the process's records are in its file.
            "trace_file": f"trace-{p['host']}.jsonl",
            "tenant": p.get("tenant") or None,
            "cgroup": as_int(meta.get("cgroup_" + p["tenant"], "")) if p.get("tenant") else None,
        }
        if rec["tool"].startswith("ib_"):
            rec["perftest"] = perftest_addresses(os.path.join(logs, p["key"] + ".log"))
        processes.append(rec)
    by_key = {p["key"]: p for p in processes}

    def qp_of(proc):
        return (proc.get("perftest") or {}).get("local", {}).get("qpn")

    # Traffic pairs: the processes of one group, server and client. The requester is the
    # client, or the server with --reversed (it then writes to the client).
    pairs = []
    for group in sorted({p["group"] for p in processes if p["group"] and p["tool"].startswith("ib_")}):
        members = [p for p in processes if p["group"] == group and p["tool"].startswith("ib_")]
        server = next((p for p in members if p["role"] == "server"), None)
        client = next((p for p in members if p["role"] == "client"), None)
        if not server or not client:
            continue
        reversed_ = "--reversed" in server["args"].split()
        req, resp = (server, client) if reversed_ else (client, server)
        args = client["args"].split()
        iters = int(args[args.index("-n") + 1]) if "-n" in args else None
        size = int(args[args.index("-s") + 1]) if "-s" in args else 65536
        op = {"ib_write_bw": "WRITE", "ib_read_bw": "READ", "ib_send_bw": "SEND",
              "ib_write_lat": "WRITE", "ib_send_lat": "SEND"}.get(client["tool"])
        pairs.append({
            "group": group, "phase": client["phase"], "tool": client["tool"], "op": op,
            "iterations": iters, "size": size, "reversed": reversed_,
            "server_pid": server["pid"], "client_pid": client["pid"],
            "requester_pid": req["pid"], "requester_ip": req["ip"], "requester_qpn": qp_of(req),
            "responder_pid": resp["pid"], "responder_ip": resp["ip"], "responder_qpn": qp_of(resp),
        })

    incast_pairs = [x for x in pairs if x["phase"] == "incast" and x["group"].startswith("incast")]
    latency = next((x for x in pairs if x["group"] == "latency"), None)
    incast_phase = next((ph for ph in phases if ph["name"] == "incast"), None)
    incast = {
        "victim_host": meta.get("incast_host"),
        "victim_ips": sorted({x["responder_ip"] for x in incast_pairs}),
        "victim_pids": [x["responder_pid"] for x in incast_pairs],
        "sender_pids": [x["requester_pid"] for x in incast_pairs],
        "sender_ips": [x["requester_ip"] for x in incast_pairs],
        "ecn_fraction": float(meta.get("incast_ecn", "0")),
        "tbf": {"rate": meta.get("tbf_rate"), "burst": meta.get("tbf_burst"),
                "limit": meta.get("tbf_limit")},
        "t_start_ns": as_int(incast_phase["t_start_ns"]) if incast_phase else None,
        "t_end_ns": as_int(incast_phase["t_end_ns"]) if incast_phase else None,
        # The latency-sensitive application into the same host meanwhile: the episode's victim.
        "latency_victim": None if not latency else {
            "pid": latency["requester_pid"], "ip": latency["requester_ip"],
            "qpn": latency["requester_qpn"], "server_pid": latency["responder_pid"],
            "server_ip": latency["responder_ip"], "tool": latency["tool"],
            "iterations": latency["iterations"]},
    }

    # Attacks: each attacker's JSON line with its victim (the perftest process owning the
    # target QP) and the alerts SPEC.md section 10 prescribes for it.
    attack_truth = []
    for a in attacks:
        attacker = next((p for p in processes if p["pid"] == a.get("pid")), None)
        victim = by_key.get(attacker["target"]) if attacker and attacker["target"] else None
        if a.get("attack") == "rkey_guess":
            expected = ["rkey_unknown"] + (["rkey_scan"] if len(a.get("rkeys_tried", [])) >= 8 else [])
        elif a.get("spoofed"):
            # As the victim's peer: a message of the peer's traced QP that no work request
            # posted, whatever its status (SPEC 10 v1.3) - the WRITE Only the victim accepted
            # and the WRITE First whose Last never comes alike.
            expected = ["injected_message"]
        else:
            expected = ["peer_mismatch"]
        attack_truth.append({
            "kind": a.get("attack"),
            "attacker_pid": a.get("pid"),
            "attacker_host": attacker["host"] if attacker else None,
            "attacker_ip": attacker["ip"] if attacker else None,
            "src_ip": a.get("src_ip"),
            "spoofed": a.get("spoofed", False),
            "victim": None if not victim else {
                "pid": victim["pid"], "comm": victim["comm"], "host": victim["host"],
                "ip": victim["ip"], "qpn": qp_of(victim),
                "peer_ip": (victim.get("perftest") or {}).get("remote", {}).get("ip"),
            },
            "expected_alerts": expected,
            "record": a,
        })

    hosts = {}
    for h in meta.get("hosts", "").split():
        hosts[h] = {"side": "left" if h in meta.get("left", "").split() else "right",
                    "ips": meta.get("ips_" + h, "").split()}
    workload = {
        "cluster": {
            "name": meta.get("cluster"),
            "hosts": hosts,
            "observer": {"namespace": meta.get("cluster", "") + "-mid", "ifaces": ["left", "right"],
                         "tool": "insert-dp inline"},
        },
        "trace_hosts": meta.get("trace_hosts", "").split(),
        "tenants": {k[len("cgroup_"):]: as_int(v) for k, v in meta.items() if k.startswith("cgroup_")},
        "t_start_ns": as_int(meta.get("t_start_ns", "")),
        "t_end_ns": as_int(meta.get("t_end_ns", "")),
        "phases": [{"name": ph["name"], "t_start_ns": as_int(ph["t_start_ns"]),
                    "t_end_ns": as_int(ph["t_end_ns"])} for ph in phases],
        # The live correlator (scripts/demo.sh): when it started, when the producers were
        # told to stop, when it had read every record, when it ended; its window interval
        # and --max-delay; the Alertmanager it delivered to. None with --no-correlate.
        "live": None if "live_start_ns" not in meta else {
            "t_start_ns": as_int(meta["live_start_ns"]),
            "t_producers_stop_ns": as_int(meta.get("live_producers_stop_ns", "")),
            "t_inputs_read_ns": as_int(meta.get("live_inputs_read_ns", "")),
            "t_end_ns": as_int(meta.get("live_end_ns", "")),
            "interval_s": float(meta.get("live_interval_s", "1")),
            "max_delay_s": float(meta.get("live_max_delay_s", "1")),
            "alertmanager": meta.get("alertmanager") or None,
        },
        "processes": processes,
        "pairs": pairs,
        "incast": incast,
        "attacks": attack_truth,
    }
    with open(os.path.join(out_dir, "workload.json"), "w") as f:
        json.dump(workload, f, indent=1)
        f.write("\n")


# ---- tee: producers -> files and the live correlator ----------------------------------------

TIME_RE = re.compile(rb'"type":"msg".*?"t_first_ns":(\d+)|"wall_ns":(\d+)')


class Stopping:
    """SIGTERM/SIGINT noted, for a loop that polls."""

    def __init__(self):
        self.stop = False
        signal.signal(signal.SIGTERM, self.note)
        signal.signal(signal.SIGINT, self.note)

    def note(self, *_):
        self.stop = True


def tee(upstream, pairs):
    stopping = Stopping()
    sel = selectors.DefaultSelector()
    listeners = []
    for pair in pairs:
        path, _, out = pair.partition("=")
        if not out:
            print(f"demo tee: '{pair}' is not SOCKET=FILE", file=sys.stderr)
            return 2
        if os.path.exists(path):
            os.unlink(path)
        ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        ls.bind(path)
        os.chmod(path, 0o600)
        ls.listen(16)
        f = open(out, "ab", buffering=0)
        listeners.append((ls, path))
        sel.register(ls, selectors.EVENT_READ, ("listen", f, os.path.basename(out)))
    # DEMO_TEE_TIMES=FILE: per chunk received, the stream, when it arrived and the newest
    # data time in it (t_first_ns of a message, wall_ns of a host record): how far behind
    # its data each producer delivers.
    arrivals = open(os.environ["DEMO_TEE_TIMES"], "w", buffering=1) if os.environ.get("DEMO_TEE_TIMES") else None
    stats = {}   # name -> [bytes, lines, connections]
    warned = set()
    conns = {}   # producer socket -> (file, name, upstream socket or None)
    closing = {}  # upstream socket -> name: write side shut, waiting for the correlator to close

    def finish(c):
        f, name, up = conns.pop(c)
        sel.unregister(c)
        c.close()
        if up is not None:
            try:
                up.shutdown(socket.SHUT_WR)
                sel.register(up, selectors.EVENT_READ, ("upstream", None, name))
                closing[up] = name
            except OSError:
                up.close()

    def forward(c):
        f, name, up = conns[c]
        try:
            data = c.recv(1 << 16)
        except OSError:
            data = b""
        if not data:
            finish(c)
            return
        if up is not None:
            try:
                up.sendall(data)
            except OSError as e:
                if name not in warned:
                    print(f"demo tee: {name}: the correlator went away ({e}); the file only",
                          file=sys.stderr)
                    warned.add(name)
                up.close()
                conns[c] = (f, name, None)
        f.write(data)
        if arrivals:
            times = [int(a or b) for a, b in TIME_RE.findall(data)]
            if times:
                arrivals.write(f"{name}\t{time.time_ns()}\t{max(times)}\t{min(times)}\n")
        s = stats[name]
        s[0] += len(data)
        s[1] += data.count(b"\n")

    deadline = None
    while True:
        if stopping.stop and deadline is None:
            deadline = time.monotonic() + 10
            for ls, path in listeners:
                sel.unregister(ls)
                ls.close()
                os.unlink(path)
            listeners = []
        if deadline is not None and (not conns and not closing or time.monotonic() > deadline):
            break
        for key, _ in sel.select(timeout=0.2):
            kind, f, name = key.data
            if kind == "listen":
                c, _ = key.fileobj.accept()
                up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    up.connect(upstream)
                except OSError as e:
                    print(f"demo tee: {name}: cannot connect to {upstream} ({e}); the file only",
                          file=sys.stderr)
                    up.close()
                    up = None
                conns[c] = (f, name, up)
                stats.setdefault(name, [0, 0, 0])[2] += 1
                sel.register(c, selectors.EVENT_READ, ("producer", f, name))
            elif kind == "producer":
                forward(key.fileobj)
            else:  # the correlator closed its end: it read this stream to its end
                up = key.fileobj
                try:
                    more = up.recv(4096)
                except OSError:
                    more = b""
                if not more:
                    sel.unregister(up)
                    up.close()
                    del closing[up]
    left = sorted(n for _, n, _ in conns.values()) + sorted(closing.values())
    print("demo tee: " + ", ".join(f"{n} {s[1]} lines in {s[2]} connection(s)"
                                   for n, s in sorted(stats.items())) +
          (f"; not confirmed read by the correlator: {left}" if left else "; all read by the correlator"),
          file=sys.stderr)
    return 1 if left else 0


# ---- the Alertmanager's view -------------------------------------------------------------------

def alert_text(labels):
    name = labels.get("alertname", "?")
    if name == "insert_congestion":
        return f"{name} toward {labels.get('node', '?')}"
    victim = f"{labels.get('victim_comm', '')}[{labels['victim_pid']}] " if "victim_pid" in labels else ""
    return (f"{name}: victim {victim}{labels.get('victim_ip', '?')} QP {qpn_text(labels.get('victim_qpn'))}, "
            f"source {labels.get('source_ip', '?')}")


def watch_alertmanager(url, out_path, t0_ns):
    stopping = Stopping()
    query = url.rstrip("/") + "/api/v2/alerts?active=true&silenced=true&inhibited=true&unprocessed=true"
    listed = {}   # fingerprint -> labels, listed at the last poll
    # (fingerprint, the alert record's t_ns): the Alertmanager knows an alert by its labels,
    # and a later alert of the same kind, victim and source (the demo's two spoofed
    # injections) is the same alert to it - listed already, its `record` annotation now the
    # new one's. Each such record is an alert of the correlator's: noted when first seen.
    seen = set()
    failures = 0
    with open(out_path, "a") as out:
        def say(text, ns):
            print(f"demo: [{(ns - t0_ns) / 1e9:5.1f}s] Alertmanager: {text}", flush=True)

        last = False
        while True:
            last = stopping.stop
            try:
                with urllib.request.urlopen(query, timeout=2) as r:
                    alerts = json.loads(r.read())
                now = time.time_ns()
                failures = 0
            except (urllib.error.URLError, OSError, ValueError) as e:
                failures += 1
                if failures == 1:
                    print(f"demo: Alertmanager {url}: {e}", file=sys.stderr, flush=True)
                alerts = None
            if alerts is not None:
                current = {}
                for a in alerts:
                    fp = a.get("fingerprint")
                    labels = a.get("labels", {})
                    current[fp] = labels
                    try:
                        record = json.loads(a.get("annotations", {}).get("record", "null"))
                    except ValueError:
                        record = None
                    t_ns = (record or {}).get("t_ns") if labels.get("kind") != "congestion" else None
                    if (fp, t_ns) in seen:
                        continue
                    again = any(f == fp for f, _ in seen)
                    seen.add((fp, t_ns))
                    out.write(json.dumps({"event": "listed", "seen_ns": now, "fingerprint": fp,
                                          "labels": labels, "startsAt": a.get("startsAt"),
                                          "endsAt": a.get("endsAt"), "record": record,
                                          "again": again}) + "\n")
                    out.flush()
                    if again:
                        psn = ((record or {}).get("evidence") or {}).get("psn_first")
                        say(f"lists another alert as {alert_text(labels)} (the same labels; "
                            f"PSN {psn_text(psn)})", now)
                    else:
                        say(f"lists {alert_text(labels)}", now)
                for fp, labels in listed.items():
                    if fp not in current:
                        out.write(json.dumps({"event": "gone", "gone_ns": now, "fingerprint": fp,
                                              "labels": labels}) + "\n")
                        out.flush()
                        say(f"no longer lists {alert_text(labels)} (resolved)", now)
                listed = current
            if last:
                return 0
            time.sleep(0.1)


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


# "insert-correlate: ALERT rkey_unknown (warning) x1: victim 10.88.0.5 QP 0x6c6000 ...;
# source 10.88.0.3 ..." or "; claimed source ..." (correlator/output/terminal_report.cpp,
# alert_line)
TOLD_RE = re.compile(r"ALERT (\S+) \(\S+\) x\d+: victim (\S+) QP (0x[0-9a-f]+) .*; (?:claimed )?source (\S+)")


def attack_psns(a):
    """The PSNs of the messages an attacker reports having sent: its guesses', or the
    injected ones."""
    if a.get("attack") == "rkey_guess":
        return {g["psn"] for g in a.get("guesses", [])}
    return set(a.get("psns") or [a.get("psn_first")])


def attack_text(a):
    """An attack as a delay line names it: rkey_guess, inject, inject spoofed WRITE_FIRST."""
    if a is None:
        return "no attack"
    if a.get("attack") != "inject":
        return a.get("attack", "?")
    return "inject" + (" spoofed" if a.get("spoofed") else "") + \
        (f" {a['opcode']}" if a.get("opcode") not in (None, "WRITE_ONLY") else "")


def alert_delays(out_dir):
    logs = os.path.join(out_dir, "logs")
    am_path = os.path.join(logs, "alertmanager.jsonl")
    with_am = os.path.exists(am_path)
    attacks = read_jsonl(os.path.join(out_dir, "attacks.jsonl"))
    msgs = []
    with open(os.path.join(out_dir, "dp.jsonl")) as f:
        for line in f:
            if '"type":"msg"' in line:
                msgs.append(json.loads(line))
    # Each attack's first packet at insert-dp: the earliest of its messages.
    psns = [attack_psns(a) for a in attacks]
    firsts = []
    for a, mine_psns in zip(attacks, psns):
        mine = [m["t_first_ns"] for m in msgs if m["src_ip"] == a.get("src_ip") and
                m["dst_ip"] == a.get("dst_ip") and m["dst_qpn"] == a.get("dst_qpn") and
                m["psn_first"] in mine_psns]
        firsts.append(min(mine) if mine else None)

    def key_of(kind, victim_ip, victim_qpn, source_ip):
        return (kind, victim_ip, int(victim_qpn) if victim_qpn is not None else -1, source_ip)

    # (kind, victim ip, victim QPN, source ip) -> when the correlator's lines telling alerts
    # of that key were printed, in order: one line per alert, at its first offence.
    told = {}
    times = os.path.join(logs, "insert-correlate-times.tsv")
    if os.path.exists(times):
        for line in open(times, errors="replace"):
            ns, _, text = line.rstrip("\n").partition("\t")
            m = TOLD_RE.search(text)
            if m and "(firing)" in text:
                told.setdefault(key_of(m.group(1), m.group(2), int(m.group(3), 16), m.group(4)), []).append(int(ns))
    # (key, the alert record's t_ns) -> the Alertmanager's first listing of that alert (the
    # watcher notes a later alert under the same labels by its record: watch_alertmanager).
    listed = {}
    for e in read_jsonl(am_path) if with_am else []:
        labels = e.get("labels", {})
        if e.get("event") != "listed" or labels.get("kind") in (None, "congestion"):
            continue
        key = key_of(labels["kind"], labels.get("victim_ip"), labels.get("victim_qpn", -1), labels.get("source_ip"))
        listed.setdefault((key, (e.get("record") or {}).get("t_ns")), (e["seen_ns"], labels))
    # Every security alert of the correlator's records, with the attack whose message its
    # evidence names (same source address, victim QP, a PSN the attacker sent): each attack
    # gets its own row even when two share kind, victim and source.
    alerts = [r for r in read_jsonl(os.path.join(out_dir, "correlated.jsonl")) if r.get("type") == "alert"]
    alerts.sort(key=lambda r: r["t_ns"])
    nth = {}
    rows = []
    for al in alerts:
        v, src = al["victim"], al["source"]
        key = key_of(al["kind"], v["ip"], v["qpn"], src["ip"])
        n = nth.get(key, 0)
        nth[key] = n + 1
        told_ns = told.get(key, [])[n] if n < len(told.get(key, [])) else None
        seen_ns = listed.get((key, al["t_ns"]), (None, {}))[0]
        psn = (al.get("evidence") or {}).get("psn_first")
        idx = next((i for i, a in enumerate(attacks) if a.get("src_ip") == src["ip"] and
                    a.get("dst_ip") == v["ip"] and a.get("dst_qpn") == v["qpn"] and psn in psns[i]), None)
        first = firsts[idx] if idx is not None else None

        def since(ns):
            return (ns - first) / 1e9 if first is not None and ns is not None else None

        rows.append({"kind": al["kind"], "victim_ip": v["ip"], "victim_qpn": v["qpn"], "victim_pid": v["pid"],
                     "source_ip": src["ip"], "psn_first": psn,
                     "attack": attacks[idx].get("attack") if idx is not None else None,
                     "attack_index": idx, "first_packet_ns": first, "alert_t_ns": al["t_ns"],
                     "told_ns": told_ns, "alertmanager_ns": seen_ns,
                     "delay_s": since(seen_ns), "told_delay_s": since(told_ns)})
    rows.sort(key=lambda r: (r["first_packet_ns"] or 0, r["kind"]))
    with open(os.path.join(out_dir, "alert-delays.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    for r in rows:
        attack = attacks[r["attack_index"]] if r["attack_index"] is not None else None
        what = (f"alert {r['kind']} (victim {r['victim_ip']} QP {qpn_text(r['victim_qpn'])}, source "
                f"{r['source_ip']}, PSN {psn_text(r['psn_first'])}")
        if r["first_packet_ns"] is None:
            print(f"{what}): no attack of attacks.jsonl with its packets in dp.jsonl matches it")
            continue
        told_s = f"told by insert-correlate after {r['told_delay_s']:.1f} s" \
            if r["told_delay_s"] is not None else "not told on insert-correlate's stderr"
        if with_am and r["delay_s"] is not None:
            print(f"{what}, {attack_text(attack)}) at Alertmanager {r['delay_s']:.1f} s after the attack's "
                  f"first packet; {told_s}")
        elif with_am:
            print(f"{what}, {attack_text(attack)}) never listed by the Alertmanager; {told_s}")
        elif r["told_delay_s"] is not None:
            print(f"{what}, {attack_text(attack)}) told by insert-correlate {r['told_delay_s']:.1f} s after "
                  "the attack's first packet (no Alertmanager)")
    # An attack is missing when none of its alerts reached the Alertmanager (was told).
    when = "delay_s" if with_am else "told_delay_s"
    missing = [f"{attack_text(a)} from {a.get('src_ip')}" for i, a in enumerate(attacks)
               if not any(r["attack_index"] == i and r[when] is not None for r in rows)]
    for m in missing:
        print(f"attack {m}: no alert of it " + ("listed by the Alertmanager" if with_am else "told"))
    return 1 if missing else 0


# ---- the latency application's story ------------------------------------------------------------

def percentile(values, p):
    """Nearest rank (p in 0..100); None without values."""
    if not values:
        return None
    v = sorted(values)
    return v[max(0, math.ceil(p / 100 * len(v)) - 1)]


def time_text(ns):
    if ns is None:
        return "-"
    return f"{ns / 1e6:.1f} ms" if ns >= 1e6 else f"{ns / 1e3:.0f} us"


def incast_on_wire(out_dir, incast):
    """(first, last): the incast senders' first packet to the incast host and their last
    acknowledgement from it, at insert-dp (the observer's clock, that of e2e times)."""
    senders, receivers = set(incast["sender_ips"]), set(incast["victim_ips"])
    first = last = None
    with open(os.path.join(out_dir, "dp.jsonl")) as f:
        for line in f:
            if '"type":"msg"' not in line:
                continue
            m = json.loads(line)
            if m["src_ip"] not in senders or m["dst_ip"] not in receivers:
                continue
            end = m["t_ack_ns"] or m["t_last_ns"]
            first = m["t_first_ns"] if first is None else min(first, m["t_first_ns"])
            last = end if last is None else max(last, end)
    return first, last


def latency_story(out_dir):
    workload = json.load(open(os.path.join(out_dir, "workload.json")))
    incast = workload["incast"]
    lat = incast["latency_victim"]
    if not lat:
        print("no latency application in workload.json")
        return 1
    e2e, app, episodes = [], None, []
    with open(os.path.join(out_dir, "correlated.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if r["type"] == "e2e" and r["pid"] == lat["pid"]:
                e2e.append(r)
            elif r["type"] == "app" and r["pid"] == lat["pid"] and r.get("final"):
                app = r
            elif r["type"] == "congestion" and r["where"]["node"] == incast["victim_host"]:
                episodes.append(r)
    first, last = incast_on_wire(out_dir, incast)
    if not e2e or app is None or first is None:
        print(f"the latency application: {len(e2e)} e2e records, app record "
              f"{'found' if app else 'missing'}, incast messages {'found' if first else 'missing'} in dp.jsonl")
        return 1

    def net(sel):
        values = [r["net_ns"] for r in sel if r["net_ns"] is not None]
        return {"msgs": len(sel), "p50_ns": percentile(values, 50), "p99_ns": percentile(values, 99)}

    parts = {"before": net([r for r in e2e if r["t_first_ns"] < first]),
             "incast": net([r for r in e2e if first <= r["t_first_ns"] <= last]),
             "after": net([r for r in e2e if r["t_first_ns"] > last])}
    # The episode that holds the incast, and what it says of the application.
    episode = max(episodes, default=None,
                  key=lambda e: min(e["t_end_ns"], last) - max(e["t_start_ns"], first))
    victim = next((v for v in episode["victims"] if v["pid"] == lat["pid"]), None) if episode else None
    story = {"pid": lat["pid"], "comm": app["comm"], "host": app["host"], "ip": lat["ip"],
             "server_ip": lat["server_ip"], "iterations": lat.get("iterations"),
             "work_requests": sum(app["msgs"].values()), "signaled_wrs": app.get("signaled_wrs"),
             "completion_p99_ns": app["completion_ns"]["p99"], "incast_first_ns": first,
             "incast_last_ns": last, "net": parts,
             "episode": None if not episode else {
                 "t_start_ns": episode["t_start_ns"], "t_end_ns": episode["t_end_ns"],
                 "victim": victim is not None,
                 "added_net_ns_mean": (victim or {}).get("added_net_ns_mean"),
                 "added_net_ns_p99": (victim or {}).get("added_net_ns_p99")}}
    with open(os.path.join(out_dir, "latency.json"), "w") as f:
        json.dump(story, f, indent=1)
        f.write("\n")

    print(f"{story['comm']}[{lat['pid']}]@{story['host']} {lat['ip']} -> {lat['server_ip']}: "
          f"{story['signaled_wrs']} of {story['work_requests']} requests signaled, completion p99 "
          f"{time_text(story['completion_p99_ns'])}; network latency per message, p50 (p99):")
    base = parts["before"]["p50_ns"]
    for name, when in (("before", "before the incast"), ("incast", "in the incast"), ("after", "after it")):
        p = parts[name]
        line = f"  {when:<18} {time_text(p['p50_ns']):>8} ({time_text(p['p99_ns'])}), {p['msgs']} messages"
        if name == "incast":
            line += f" in {(last - first) / 1e9:.1f} s"
            if base and p["p50_ns"]:
                line += f": x{p['p50_ns'] / base:.0f}"
        print(line)
    if not episode:
        print(f"  no congestion episode toward {incast['victim_host']}")
        return 1
    added = ""
    if victim and victim.get("added_net_ns_mean") is not None:
        added = f", +{time_text(victim['added_net_ns_mean'])} per message"
        if victim.get("added_net_ns_p99") is not None:
            added += f" (p99 +{time_text(victim['added_net_ns_p99'])})"
    print(f"  the congestion episode toward {incast['victim_host']} "
          f"({(episode['t_end_ns'] - episode['t_start_ns']) / 1e9:.2f} s: from "
          f"{(episode['t_start_ns'] - first) / 1e9:+.2f} s of the incast's start to "
          f"{(episode['t_end_ns'] - last) / 1e9:+.2f} s of its end) names it "
          + ("a victim" + added if victim else "no victim"))
    return 0 if victim else 1


def main(argv):
    if len(argv) >= 3 and argv[1] == "tee":
        return tee(argv[2], argv[3:])
    if len(argv) == 5 and argv[1] == "watch-alertmanager":
        return watch_alertmanager(argv[2], argv[3], int(argv[4]))
    if len(argv) == 3 and argv[1] == "alert-delays":
        return alert_delays(argv[2])
    if len(argv) == 3 and argv[1] == "latency":
        return latency_story(argv[2])
    if len(argv) == 2 and not argv[1].startswith("-"):
        write_workload(argv[1])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

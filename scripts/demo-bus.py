#!/usr/bin/env python3
"""The scale-out demo's bus helpers (scripts/demo.sh --scale-out, docs/scale-out.md "Demo").

demo-bus.py free-ports N
    N distinct free TCP ports on the loopback, one a line (all bound at once, then freed).

demo-bus.py ready DEADLINE_S HTTP_PORT...
    Waits until every nats-server node (its monitoring port) has JetStream enabled
    (/healthz?js-enabled-only=true) and all agree on a JetStream meta leader (/jsz): the
    cluster can create a replicated stream. Prints the leader; exit 1 at the deadline.

demo-bus.py drained DEADLINE_S CONSUMERS HTTP_PORT...
    Waits until the durable consumers named CONSUMERS (comma-separated) all exist and each
    has delivered every message of its partition and had it acknowledged (num_pending and
    num_ack_pending 0, as the consumer's leader reports it in /jsz?consumers=true): the
    correlator instances have read everything the producers published. Exit 1 at the
    deadline, naming what is still pending.

demo-bus.py union OUT_FILE RECORDS...
    The instances' --records files as one: every record but their summaries (each
    instance's own), the cgroup names (every partition's join writes those of every host)
    once each. The instances decide disjoint records (docs/scale-out.md), so this is what one
    process would have written.

demo-bus.py verdicts RECORDS
    The alerts and congestion episodes of RECORDS, a line each (with the episode's
    contributors): what the single-process demo's terminal report says of them.
"""
import json
import socket
import sys
import time
import urllib.request


def monitor(port, path):
    """A monitoring endpoint of the node on PORT as JSON; None when it does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
            return json.loads(r.read())
    except (OSError, ValueError):
        return None


def free_ports(n):
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        for s in socks:
            print(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return 0


def poll(deadline_s, step):
    """Calls step() every 100 ms until it returns (True, text) or the deadline passes; then
    prints the last text and returns its exit status."""
    end = time.monotonic() + deadline_s
    while True:
        done, text = step()
        if done or time.monotonic() >= end:
            print(text)
            return 0 if done else 1
        time.sleep(0.1)


def ready(deadline_s, ports):
    def step():
        healthy = [(monitor(p, "/healthz?js-enabled-only=true") or {}).get("status") == "ok"
                   for p in ports]
        leaders = {((monitor(p, "/jsz") or {}).get("meta_cluster") or {}).get("leader") or ""
                   for p in ports}
        if all(healthy) and len(leaders) == 1 and "" not in leaders:
            return True, leaders.pop()
        return False, (f"{sum(healthy)} of {len(ports)} nodes with JetStream, meta leaders "
                       f"{sorted(leaders)}")
    return poll(deadline_s, step)


def consumers_seen(ports):
    """{consumer name: its detail as its leader reports it}."""
    out = {}
    for p in ports:
        # Only the leader's view: a follower's counts lag (its ack floor stays 0 a while).
        me = (monitor(p, "/varz") or {}).get("server_name")
        jsz = monitor(p, "/jsz?consumers=true") or {}
        for account in jsz.get("account_details") or []:
            for stream in account.get("stream_detail") or []:
                for c in stream.get("consumer_detail") or []:
                    if me and (c.get("cluster") or {}).get("leader") == me:
                        out[c["name"]] = c
    return out


def drained(deadline_s, names, ports):
    def step():
        seen = consumers_seen(ports)
        missing = [n for n in names if n not in seen]
        pending = {n: (seen[n].get("num_pending", 0), seen[n].get("num_ack_pending", 0))
                   for n in names if n in seen}
        busy = {n: v for n, v in pending.items() if v != (0, 0)}
        if not missing and not busy:
            delivered = sum((seen[n].get("delivered") or {}).get("stream_seq", 0) > 0 for n in names)
            return True, f"{len(names)} consumers drained ({delivered} with messages)"
        return False, f"not drained: missing {missing}, (pending, unacknowledged) {busy}"
    return poll(deadline_s, step)


def union(out_path, paths):
    cgroups = set()
    n = 0
    with open(out_path, "w") as out:
        for path in paths:
            with open(path) as f:
                for line in f:
                    if line.startswith('{"type":"summary"'):
                        continue
                    if line.startswith('{"type":"cgroup"'):
                        if line in cgroups:
                            continue
                        cgroups.add(line)
                    out.write(line)
                    n += 1
    print(f"{n} records")
    return 0


def process_text(p):
    """comm[pid]@host as the terminal report names a process; untraced without a pid."""
    return f"{p.get('comm')}[{p['pid']}]@{p.get('host')}" if p.get("pid") is not None else "untraced"


def app_text(a):
    return f"{process_text(a)} ({a.get('ip')})"


def verdicts(path):
    alerts, episodes = [], []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r["type"] == "alert":
                alerts.append(r)
            elif r["type"] == "congestion":
                episodes.append(r)
    for a in sorted(alerts, key=lambda r: r["t_ns"]):
        v, s = a["victim"], a["source"]
        claimed = "claimed source" if s.get("claimed") else "source"
        print(f"ALERT {a['kind']} ({a.get('severity', '?')}) x{a['count']}: victim {v['ip']} QP "
              f"{v['qpn']:#x} {process_text(v)}; {claimed} {s['ip']} {process_text(s)}")
    for e in sorted(episodes, key=lambda r: r["t_start_ns"]):
        sig = e["signals"]
        print(f"CONGESTION toward {e['where']['node']} for {(e['t_end_ns'] - e['t_start_ns']) / 1e6:.1f}"
              f" ms: {sig.get('cnps', 0)} CNPs, {sig.get('ecn_ce', 0)} ECN-CE; contributors "
              + ", ".join(app_text(c) for c in e["contributors"])
              + "; victims " + ", ".join(app_text(v) for v in e["victims"]))
    return 0


def main(argv):
    if len(argv) == 3 and argv[1] == "free-ports":
        return free_ports(int(argv[2]))
    if len(argv) >= 4 and argv[1] == "ready":
        return ready(float(argv[2]), argv[3:])
    if len(argv) >= 5 and argv[1] == "drained":
        return drained(float(argv[2]), argv[3].split(","), argv[4:])
    if len(argv) >= 4 and argv[1] == "union":
        return union(argv[2], argv[3:])
    if len(argv) == 3 and argv[1] == "verdicts":
        return verdicts(argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

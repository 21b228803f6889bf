#!/usr/bin/env python3
"""bus-load.py [--qps N] [--packets N] [--runs R] [--partitions N] [--replicas 1|3] [--keep DIR]

The bus's cost on this machine (docs/scale-out-cost.md), against a real `nats-server -js`
that the script starts on free loopback ports (client, monitoring, routes), its store in a
temporary directory - or, with --replicas 3, a cluster of three nodes and streams of three
replicas:

(a) the producer: `insert-dp replay` of an insert-gen `large` capture (--qps QPs,
    --packets frames, with host traces) without and with `--nats`: wall and CPU seconds
    (getrusage of the child), records/s, the CPU the bus adds per record; the bytes the
    stream holds per record (the monitoring endpoint's /jsz) and per message beyond the
    records' lines; nats-server's CPU seconds (/proc/PID/stat, all nodes) per partition
    record;
(b) the correlator: records/s of one instance - `insert-correlate --threads 1` batch over
    the files, a live run over the same files through pipes (no bus), and `insert-correlate
    --nats --partitions 0-(N-1)` consuming the same records from the stream (published by
    insert-dp replay --nats and, one producer per host, by the tests' nats_publish), timed
    until its durable consumers have delivered everything and had it acknowledged (/jsz:
    nothing pending, nothing waiting for an acknowledgement) and until it exits on SIGTERM
    after that; nats-server's CPU per record meanwhile.

Each figure is the median of --runs runs (default 3); every run publishes to a stream of
its own. Prints a table; about 2 minutes with the defaults on 2 cores.

A run whose producers dropped records (the bus too slow for their end's wait, or away)
says so: its figures are then of fewer records than counted.

Needs the build (INSERT_BUILD_ROOT, default build/: insert-gen, insert-dp, insert-correlate
and tests/nats/nats_publish), nats-server, and what insert-dp replay needs (root, as the
tests run it)."""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("INSERT_BUILD_ROOT", os.path.join(HERE, "..", "build"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "nats"))
import bus  # noqa: E402  the partition rule, written from docs/scale-out.md

GEN = os.path.join(BUILD, "bench", "gen", "insert-gen")
DP = os.path.join(BUILD, "dataplane", "tools", "insert-dp")
CORRELATE = os.path.join(BUILD, "correlator", "insert-correlate")
NATS_PUBLISH = os.path.join(BUILD, "tests", "nats", "nats_publish")
TICK = os.sysconf("SC_CLK_TCK")


def log(msg):
    print(f"bus-load: {msg}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Timed:
    """A child process: its wall time and its CPU seconds (user + system, from wait4); its
    stderr in a file (a pipe nobody reads while it runs could fill and stop it)."""

    def __init__(self, args, **kwargs):
        self.args = args
        self.err = tempfile.TemporaryFile("w+")
        self.start = time.monotonic()
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=self.err, **kwargs)

    def stderr(self):
        self.err.seek(0)
        return self.err.read()

    def wait(self, expect=0):
        _, status, usage = os.wait4(self.proc.pid, 0)
        self.wall = time.monotonic() - self.start
        self.cpu = usage.ru_utime + usage.ru_stime
        self.sys = usage.ru_stime
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        if expect is not None and self.proc.returncode != expect:
            sys.exit(f"bus-load: {' '.join(self.args)}: exit {self.proc.returncode}: "
                     f"{self.stderr()}")
        return self


def timed(args, **kwargs):
    return Timed(args, **kwargs).wait()


class NatsNodes:
    """nats-server -js: one node, or (--replicas 3) a cluster of three, each on loopback ports
    of its own (client, monitoring, route) with its store in `tmp`, made afresh."""

    def __init__(self, tmp, size):
        self.ports = [(free_port(), free_port(), free_port()) for _ in range(size)]
        self.names = [f"bus-load-n{i}" for i in range(size)]
        self.url = ",".join(f"nats://127.0.0.1:{c}" for c, _, _ in self.ports)
        self.procs, self.logs = [], []
        for i, (client, http, route) in enumerate(self.ports):
            store = os.path.join(tmp, f"store-{i}")
            shutil.rmtree(store, ignore_errors=True)  # a kept directory's streams of before
            conf = (f"server_name: {self.names[i]}\nlisten: 127.0.0.1:{client}\n"
                    f"http: 127.0.0.1:{http}\njetstream {{ store_dir: \"{store}\" }}\n")
            if size > 1:
                routes = ", ".join(f"nats-route://127.0.0.1:{r}" for j, (_, _, r)
                                   in enumerate(self.ports) if j != i)
                conf += (f"cluster {{ name: bus-load, listen: 127.0.0.1:{route}, "
                         f"routes: [{routes}] }}\n")
            path = os.path.join(tmp, f"nats-{i}.conf")
            with open(path, "w") as f:
                f.write(conf)
            self.logs.append(open(os.path.join(tmp, f"nats-{i}.log"), "w"))
            self.procs.append(subprocess.Popen(["nats-server", "-c", path],
                                               stdout=self.logs[i], stderr=self.logs[i]))
        end = time.monotonic() + 60
        while not self.ready():
            if any(p.poll() is not None for p in self.procs) or time.monotonic() > end:
                sys.exit(f"bus-load: nats-server did not start (see {tmp}/nats-*.log)")
            time.sleep(0.1)  # polling the servers' start, with a deadline

    def jsz(self, i, query="?accounts=true&streams=true&consumers=true"):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ports[i][1]}/jsz{query}",
                                    timeout=5) as r:
            return json.load(r)

    def ready(self):
        """Every node answers; a cluster's nodes agree on a JetStream meta leader."""
        try:
            leaders = {(self.jsz(i, "").get("meta_cluster") or {}).get("leader", "")
                       for i in range(len(self.procs))}
        except OSError:
            return False
        return len(self.procs) == 1 or (len(leaders) == 1 and "" not in leaders)

    def stream(self, name):
        """(state, [consumer details]) of stream `name` as its leader and its consumers'
        leaders see them (one node: that node's), or (None, [])."""
        state, consumers = None, []
        for i, node in enumerate(self.names):
            for account in self.jsz(i).get("account_details", []):
                for s in account.get("stream_detail", []) or []:
                    if s["name"] != name:
                        continue
                    if (s.get("cluster") or {}).get("leader", node) == node:
                        state = s["state"]
                    consumers += [c for c in s.get("consumer_detail", []) or []
                                  if (c.get("cluster") or {}).get("leader", node) == node]
        return state, consumers

    def cpu(self):
        """The nodes' (user, system) CPU seconds so far, summed."""
        user = system = 0
        for p in self.procs:
            with open(f"/proc/{p.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            user, system = user + int(fields[11]) / TICK, system + int(fields[12]) / TICK
        return user, system

    def cpu_since(self, before):
        """(CPU seconds, system seconds) since `before` (a cpu())."""
        user, system = self.cpu()
        return user - before[0] + system - before[1], system - before[1]

    def stop(self):
        for p in self.procs:
            p.terminate()
        for p, log in zip(self.procs, self.logs):
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:  # an overloaded node, still busy with its store
                p.kill()
                p.wait()
            log.close()


def acknowledged(stderr):
    """insert-dp's / nats_publish's last line: (records acknowledged, batches, dropped)."""
    m = re.search(r"(\d+) records in (\d+) batches acknowledged.*?(\d+) dropped", stderr)
    if not m:
        sys.exit(f"bus-load: no totals line in: {stderr[-1000:]}")
    return int(m[1]), int(m[2]), int(m[3])


class Workload:
    """The capture, insert-dp's records of it, the host traces split by host, and what the
    partition rule makes of them."""

    def __init__(self, tmp, args):
        base = os.path.join(tmp, "large")
        self.pcap, self.dp, self.hosts = base + ".pcap", base + ".dp.jsonl", base + ".hosts.jsonl"
        timed([GEN, "--scenario", "large", "--seed", "1", "--qps", str(args.qps),
               "--packets", str(args.packets), "--out", self.pcap, "--truth", base + ".truth.json",
               "--host-traces", self.hosts, "--quiet"])
        timed([DP, "replay", self.pcap, "--quiet", "--records", self.dp])
        n = args.partitions
        self.dp_records, self.dp_copies, self.dp_body = self.count(self.dp, n)
        self.host_records, self.host_copies, self.host_body = self.count(self.hosts, n)
        by_host = defaultdict(list)
        with open(self.hosts) as f:
            for line in f:
                by_host[json.loads(line).get("host", "?")].append(line)
        self.host_files = []
        for host, lines in sorted(by_host.items()):
            path = f"{base}.host-{host}.jsonl"
            with open(path, "w") as f:
                f.writelines(lines)
            self.host_files.append((host, path))
        self.records = self.dp_records + self.host_records

    @staticmethod
    def count(path, n):
        """(records, partition records, bytes of the partition records' lines)."""
        records = copies = body = 0
        with open(path, "rb") as f:
            for line in f:
                k = len(bus.partitions_of(json.loads(line), n))
                records += 1
                copies += k
                body += k * len(line)
        return records, copies, body


def producer_run(nats, w, args, run):
    """(a): replay without and with --nats, one stream of its own."""
    plain = timed([DP, "replay", w.pcap, "--quiet", "--records", "/dev/null"])
    prefix = f"dp{run}"
    before = nats.cpu()
    bused = timed([DP, "replay", w.pcap, "--quiet", "--records", "/dev/null", "--nats", nats.url,
                   "--nats-subject", prefix, "--nats-partitions", str(args.partitions),
                   "--nats-replicas", str(args.replicas)])
    server_cpu, server_sys = nats.cpu_since(before)
    acked, batches, dropped = acknowledged(bused.stderr())
    if dropped:
        log(f"run {run}: insert-dp replay --nats dropped {dropped} partition records")
    state, _ = nats.stream(prefix)
    return {
        "plain_wall": plain.wall, "plain_cpu": plain.cpu, "plain_sys": plain.sys,
        "bus_wall": bused.wall, "bus_cpu": bused.cpu, "bus_sys": bused.sys,
        "acked": acked, "dropped": dropped, "messages": state["messages"],
        "bytes": state["bytes"], "server_cpu": server_cpu, "server_sys": server_sys,
    }


def consumers_done(nats, prefix, n):
    """Every partition's durable consumer exists, has delivered everything and has it
    acknowledged (nats_correlate_test.py's consumers_done, through /jsz)."""
    _, consumers = nats.stream(prefix)
    mine = {c["name"]: c for c in consumers if c["name"].startswith(prefix + "-correlate-p")}
    if len(mine) != n:
        return False
    return all(c["num_pending"] == 0 and c["num_ack_pending"] == 0 for c in mine.values())


def correlator_run(nats, w, args, tmp, run):
    """(b): batch, live through pipes, and one --nats instance over every partition."""
    out = os.path.join(tmp, "out.jsonl")
    batch = timed([CORRELATE, w.dp, w.hosts, "--threads", "1", "--quiet", "--records", out])

    fifos = [os.path.join(tmp, f"in{i}.fifo") for i in range(2)]
    for f in fifos:
        if not os.path.exists(f):
            os.mkfifo(f)
    live = Timed([CORRELATE, *fifos, "--quiet", "--records", out])
    feeders = []
    for src, fifo in zip([w.dp, w.hosts], fifos):
        with open(fifo, "w") as sink:  # the run's end of file: the feeder's, once it is done
            feeders.append(subprocess.Popen(["cat", src], stdout=sink))
    for p in feeders:
        p.wait()
    live.wait()

    prefix = f"c{run}"
    common = ["--nats-subject", prefix, "--nats-partitions", str(args.partitions)]
    replay = timed([DP, "replay", w.pcap, "--quiet", "--records", "/dev/null", "--nats",
                    nats.url, "--nats-replicas", str(args.replicas), *common])
    acked, _, dropped = acknowledged(replay.stderr())
    for host, path in w.host_files:
        # nats_publish takes one URL (the client learns the cluster's other nodes from it).
        p = timed([NATS_PUBLISH, nats.url.split(",")[0], path, "--producer",
                   f"insert-trace.{host}.1.1", "--subject", prefix, "--partitions",
                   str(args.partitions)])
        more, _, lost = acknowledged(p.stderr())
        acked, dropped = acked + more, dropped + lost
    if dropped:
        log(f"run {run}: {dropped} partition records dropped publishing the correlator's input: "
            "its records/s are of fewer records than counted")
    before = nats.cpu()
    every = f"0-{args.partitions - 1}"
    inst = Timed([CORRELATE, "--nats", nats.url, *common, "--partitions", every, "--quiet",
                  "--records", out])
    while not consumers_done(nats, prefix, args.partitions):
        if inst.proc.poll() is not None:
            sys.exit(f"bus-load: insert-correlate --nats exited: {inst.stderr()}")
        time.sleep(0.02)  # polling the consumers' state, as the tests do
    consumed = time.monotonic() - inst.start
    server_cpu, server_sys = nats.cpu_since(before)
    state, _ = nats.stream(prefix)
    inst.proc.send_signal(signal.SIGTERM)
    inst.wait()
    # What the instance decided at its end (--on-stop: the last instance decides everything
    # it holds) went to the output stream PREFIX-out: stored by nats-server too.
    server_end, _ = nats.cpu_since(before)
    out_state, _ = nats.stream(prefix + "-out")
    return {
        "batch_wall": batch.wall, "batch_cpu": batch.cpu, "batch_sys": batch.sys,
        "live_wall": live.wall, "live_cpu": live.cpu, "live_sys": live.sys,
        "nats_consumed": consumed, "nats_wall": inst.wall, "nats_cpu": inst.cpu,
        "nats_sys": inst.sys, "server_cpu": server_cpu, "server_sys": server_sys,
        "bytes": state["bytes"], "messages": state["messages"], "acked": acked,
        "dropped": dropped, "server_end": server_end,
        "out_messages": out_state["messages"] if out_state else 0,
        "out_bytes": out_state["bytes"] if out_state else 0,
    }


def per_acked(rows, key):
    """The median over the runs of `key` per partition record the bus acknowledged."""
    return statistics.median(r[key] / r["acked"] for r in rows)


def med(rows, key):
    return statistics.median(r[key] for r in rows)


def report(w, a, b, args):
    n = args.partitions
    dp, copies = w.dp_records, w.dp_copies
    print(f"# bus-load: insert-gen large --qps {args.qps} --packets {args.packets}: "
          f"{w.dp_records} insert-dp records ({w.dp_copies} partition records of {n}), "
          f"{w.host_records} host-trace records ({w.host_copies} partition records), "
          f"{len(w.host_files)} hosts; medians of {args.runs} runs; {os.cpu_count()} CPUs")
    head = f"{'':30} {'wall s':>7} {'CPU s':>7} {'sys':>5} {'records/s':>10}"

    def row(label, records, wall, cpu=None, system=None, per=None):
        cpu_s = f"{cpu:7.2f} {system / cpu:5.0%}" if cpu else f"{'':7} {'':5}"
        print(f"{label:30} {wall:7.2f} {cpu_s} {records / wall:10.0f} {per or ''}")

    print("\n## (a) producer: insert-dp replay, records written to /dev/null")
    print(head + f" {'CPU ns/record':>14}")
    for label, k in [("replay", "plain"), ("replay --nats", "bus")]:
        cpu = med(a, k + "_cpu")
        row(label, dp, med(a, k + "_wall"), cpu, med(a, k + "_sys"), f"{cpu / dp * 1e9:14.0f}")
    extra = statistics.median(r["bus_cpu"] - r["plain_cpu"] for r in a)
    print(f"the bus adds {extra:.2f} CPU s: {extra / dp * 1e9:.0f} ns per insert-dp record "
          f"(median of the runs' differences)")
    dropped = max(r["dropped"] for r in a)
    stored, msgs = med(a, "bytes"), med(a, "messages")
    beyond = f"{(stored - w.dp_body) / msgs:.0f}" if not dropped else "? (records dropped)"
    print(f"stream: {stored / dp:.0f} bytes per insert-dp record ({stored / copies:.0f} per "
          f"partition record; the lines alone {w.dp_body / dp:.0f}, {copies / dp:.2f} copies); "
          f"{msgs:.0f} messages of {copies / msgs:.0f} partition records, {beyond} bytes each "
          f"beyond the lines")
    scpu, per = med(a, "server_cpu"), per_acked(a, "server_cpu")
    print(f"nats-server: {scpu:.2f} CPU s ({med(a, 'server_sys') / scpu:.0%} sys) storing them: "
          f"{per * 1e9:.0f} ns per partition record, {per * copies / dp * 1e9:.0f} ns per "
          f"insert-dp record")

    print("\n## (b) one correlator instance, every partition: "
          f"{w.records} records (insert-dp's and the host traces)")
    print(head + f" {'records/CPU s':>14}")
    for label, k in [("batch --threads 1 (files)", "batch"), ("live, 2 pipes (no bus)", "live"),
                     ("--nats, until exit (SIGTERM)", "nats")]:
        cpu = med(b, k + "_cpu")
        row(label, w.records, med(b, k + "_wall"), cpu, med(b, k + "_sys"),
            f"{w.records / cpu:14.0f}")
    row("--nats, until consumed", w.records, med(b, "nats_consumed"))
    total_copies = w.dp_copies + w.host_copies
    stored = med(b, "bytes")
    host_bytes = stored - med(a, "bytes")
    print(f"stream: {stored / w.records:.0f} bytes per record, {host_bytes / w.host_records:.0f} "
          f"per host-trace record ({w.host_copies / w.host_records:.2f} copies; the lines alone "
          f"{w.host_body / w.host_records:.0f}); {total_copies / w.records:.2f} partition records "
          f"per record")
    scpu, per = med(b, "server_cpu"), per_acked(b, "server_cpu")
    print(f"nats-server: {scpu:.2f} CPU s ({med(b, 'server_sys') / scpu:.0%} sys) delivering "
          f"them: {per * 1e9:.0f} ns per partition record, "
          f"{per * total_copies / w.records * 1e9:.0f} ns per record")
    if med(b, "out_bytes"):
        print(f"nats-server until the instance exited: {med(b, 'server_end'):.2f} CPU s, the "
              f"instance's output stream (PREFIX-out) included: {med(b, 'out_messages'):.0f} "
              f"messages, {med(b, 'out_bytes') / 1e6:.0f} MB")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--qps", type=int, default=2000, help="insert-gen large: QPs")
    ap.add_argument("--packets", type=int, default=1500000, help="insert-gen large: frames")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--replicas", type=int, choices=[1, 3], default=1,
                    help="3: a cluster of three nodes, streams of three replicas")
    ap.add_argument("--keep", help="work in this directory and keep it")
    args = ap.parse_args()
    for program in [GEN, DP, CORRELATE, NATS_PUBLISH]:
        if not os.path.exists(program):
            sys.exit(f"bus-load: {program} is not built (INSERT_BUILD_ROOT)")
    with tempfile.TemporaryDirectory(prefix="insert-bus-load-") as scratch:
        tmp = args.keep or scratch
        os.makedirs(tmp, exist_ok=True)
        log("making the workload")
        w = Workload(tmp, args)
        nats = NatsNodes(tmp, args.replicas)
        try:
            a, b = [], []
            for run in range(1, args.runs + 1):
                log(f"run {run} of {args.runs}")
                a.append(producer_run(nats, w, args, run))
                b.append(correlator_run(nats, w, args, tmp, run))
            if args.keep:
                with open(os.path.join(tmp, "runs.json"), "w") as f:
                    json.dump({"producer": a, "correlator": b}, f, indent=1)
        finally:
            nats.stop()
        report(w, a, b, args)


main()

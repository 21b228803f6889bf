#!/usr/bin/env python3
"""soak-dataplane.py [--mode monitor|inline] [--seconds S] [--pps N] [--qps N] [--packets N]
                    [--idle-timeout S] [--interval S] [--max-endpoints N] [--records PATH]
                    [--max-growth-mb M] [--max-rss-mb R] [--warmup S] [--csv FILE]
                    [-- INSERT-DP OPTIONS]

Runs `insert-dp monitor` (or `inline`) on veths in network namespaces of its own
(scripts/netns-inline.sh) under endpoint churn for S seconds and shows that its memory
stays flat (docs/performance.md, "insert-dp live: memory over time"). Traffic: a new
insert-gen `large` capture per round (a new seed each time: --qps QPs with random QPNs on
16 hosts, --packets frames of single-packet WRITEs and their ACKs), replayed into the
monitored link with tcpreplay at --pps while the next one is made, so that every round
brings endpoints the dataplane has never seen and the last round's go idle and are evicted
(--idle-timeout, default 2 s); after it, one of insert-gen's other scenarios in turn, with
the same seed (UD, CM, losses, congestion, attacks, IPv6/VLAN, malformed frames). insert-dp writes periodic `qp` records (--interval) to a pipe
this script counts and discards (or to --records PATH); DPDK telemetry (/insert/stats,
/insert/top_qps) and Prometheus /metrics (--http in the namespace) are read every second,
as a monitoring system would.

Every second one CSV line: seconds, frames sent (the monitored port's received frames),
insert-dp's RSS in MB, then the frames insert-dp received (/insert/stats pkts), live
endpoints, evictions so far and records written. With
--max-rss-mb, exits 1 when RSS is ever above R MB; with --max-growth-mb, when it grows by
more than M MB from the end of the warm-up (--warmup, default a quarter of the run) to its
peak after it. Also exits 1 when insert-dp exits with an error, or refuses endpoints for a
full table (--max-endpoints too small for the churn).

Needs root (namespaces, af_packet), tcpreplay and the build (INSERT_BUILD_ROOT, default
build/). Namespaces are named soakdp<pid>-* and removed at the end, on failure and on
SIGINT/SIGTERM."""
import argparse
import ctypes
import http.client
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

from soak_rss import (
    BUILD, HERE, RecordCounter, RssVerdict, add_limit_options, logger,
    missing_prerequisite, rss_mb, split_passthrough, terminate, write_csv)

INSERT_DP = os.path.join(BUILD, "dataplane", "tools", "insert-dp")
INSERT_GEN = os.path.join(BUILD, "bench", "gen", "insert-gen")
NETNS = os.path.join(HERE, "netns-inline.sh")
HTTP_PORT = 9469
CLONE_NEWNET = 0x40000000
# Scenarios replayed after each round's `large` capture, one per round in turn.
MIX = ["mixed_ops", "cm_pairing", "losses", "reordering", "congestion", "attacks",
       "ipv6_vlan_wrap", "malformed_background", "clean_write"]


log = logger("soak-dataplane")


def line(sample, seconds_format):
    t, frames, rss, received, live, evicted, records = sample
    return f"{seconds_format.format(t)},{frames},{rss:.1f},{received},{live},{evicted},{records}"


def rx_frames(pid, iface):
    """Frames `iface` received, from /proc/PID/net/dev: the counters of PID's namespace."""
    try:
        with open(f"/proc/{pid}/net/dev") as f:
            for line in f:
                name, _, rest = line.partition(":")
                if name.strip() == iface:
                    return int(rest.split()[1])
    except OSError:
        pass
    return 0


class Topology:
    def __init__(self):
        self.name = f"soakdp{os.getpid() % 100000}"
        self.up = False

    def __enter__(self):
        subprocess.run([NETNS, "down", self.name], capture_output=True, timeout=30)
        subprocess.run([NETNS, "up", self.name], check=True, timeout=30)
        self.up = True
        return self

    def down(self):
        if self.up:
            subprocess.run([NETNS, "down", self.name], capture_output=True, timeout=30)
            self.up = False

    def __exit__(self, *exc):
        self.down()

    def cmd(self, role, *argv):
        return [NETNS, "exec", self.name, role] + list(argv)


class Telemetry:
    """One DPDK telemetry connection kept open (each connection is a thread in insert-dp)."""

    def __init__(self, prefix):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.s.settimeout(5)
        self.s.connect(f"/var/run/dpdk/{prefix}/dpdk_telemetry.v2")
        self.s.recv(4096)

    def get(self, command):
        self.s.send(command.encode())
        return json.loads(self.s.recv(1 << 16).decode())[command]

    def close(self):
        self.s.close()


class Scraper(threading.Thread):
    """GET /metrics every second from inside the namespace (setns moves this thread only)."""

    def __init__(self, ns_name, stop):
        super().__init__(daemon=True)
        self.ns_name, self.stop_event, self.scrapes, self.errors = ns_name, stop, 0, 0

    def run(self):
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(f"/run/netns/{self.ns_name}", os.O_RDONLY)
        try:
            if libc.setns(fd, CLONE_NEWNET) != 0:
                log(f"setns: {os.strerror(ctypes.get_errno())}; no /metrics scrapes")
                return
        finally:
            os.close(fd)
        while not self.stop_event.wait(1.0):
            try:
                c = http.client.HTTPConnection("127.0.0.1", HTTP_PORT, timeout=5)
                c.request("GET", "/metrics")
                r = c.getresponse()
                r.read()
                c.close()
                self.scrapes += 1 if r.status == 200 else 0
                self.errors += 0 if r.status == 200 else 1
            except OSError:
                self.errors += 1


def read_pcap(path):
    """The file header and each record (its 16-byte header and frame) of a pcap file."""
    with open(path, "rb") as f:
        data = f.read()
    endian = "<" if struct.unpack("<I", data[:4])[0] in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    records, off = [], 24
    while off + 16 <= len(data):
        incl = struct.unpack(endian + "I", data[off + 8:off + 12])[0]
        records.append(data[off:off + 16 + incl])
        off += 16 + incl
    return data[:24], records


def interleave(path, other):
    """Writes `other`'s frames into `path` evenly among its own, in order (tcpreplay --pps
    ignores the timestamps)."""
    head, a = read_pcap(path)
    _, b = read_pcap(other)
    out, j = [], 0
    for i, rec in enumerate(a):
        out.append(rec)
        while j < len(b) and j * len(a) <= i * len(b):
            out.append(b[j])
            j += 1
    out += b[j:]
    with open(path, "wb") as f:
        f.write(head)
        f.writelines(out)


class Captures(threading.Thread):
    """Makes round k+1's captures while round k is replayed (insert-gen, a seed per round)."""

    def __init__(self, tmp, args):
        super().__init__(daemon=True)
        self.tmp, self.args = tmp, args
        self.ready = []  # each round's captures, at most two rounds waiting
        self.cond = threading.Condition()
        self.done = False
        self.error = None

    def run(self):
        seed = self.args.seed
        while True:
            with self.cond:
                self.cond.wait_for(lambda: self.done or len(self.ready) < 2)
                if self.done:
                    return
            # `large` with this round's seed, then (unless --no-mix) one of the other
            # scenarios with it: UD and QP 1, CM, losses and NAKs, CNPs, IPv6 and VLANs,
            # malformed and non-RoCE frames.
            scenarios = [("large", ["--qps", str(self.args.qps), "--packets",
                                    str(self.args.packets)])]
            if not self.args.no_mix:
                scenarios.append((MIX[seed % len(MIX)], []))
            if self.args.long_lived:
                scenarios.append((self.long_lived(seed), []))
            paths = []
            for name, opts in scenarios:
                base = os.path.basename(name).removesuffix(".json")
                path = os.path.join(self.tmp, f"round{seed}.{base}.pcap")
                # The long-lived connections keep their seed: the same hosts, source ports
                # and message sizes every round, only their PSNs move on.
                gen_seed = self.args.seed if name.endswith(".json") else seed
                r = subprocess.run([INSERT_GEN, "--scenario", name, "--seed", str(gen_seed), *opts,
                                    "--threads", "1", "--quiet", "--out", path, "--truth",
                                    os.devnull], capture_output=True, text=True)
                if r.returncode != 0:
                    with self.cond:
                        self.error = f"insert-gen {name} seed {seed}: {r.stderr.strip()}"
                        self.done = True
                        self.cond.notify_all()
                    return
                paths.append(path)
                if name.endswith(".json"):
                    os.unlink(name)
            if self.args.long_lived:  # spread over the round: never idle for long
                long_path = paths.pop()
                interleave(paths[0], long_path)
                os.unlink(long_path)
            with self.cond:
                self.ready.append(paths)
                self.cond.notify_all()
            seed += 1

    def long_lived(self, seed):
        """Round `seed - first seed` of the long-lived connections: a scenario file with
        their fixed QPNs on hosts 10.1.0.x and --long-msgs single-packet WRITEs each,
        starting at the PSN where the last round's ended."""
        k, m = self.args.long_lived, self.args.long_msgs
        rnd = seed - self.args.seed
        conns = []
        for i in range(k):
            a = i % 16
            b = (a + 1 + (i // 16) % 15) % 16
            conns.append({"a": a, "b": b, "transport": "RC", "mtu": 1024,
                          "qpn_a": 0x100000 + 2 * i, "qpn_b": 0x100001 + 2 * i,
                          "psn_a": (rnd * m) % (1 << 24), "psn_b": 0})
        scenario = {
            "name": "long_lived", "description": "soak-dataplane.py's long-lived connections",
            "hosts": [{"ip": f"10.1.0.{i + 1}"} for i in range(16)], "connections": conns,
            "workload": {"msgs_per_conn": m, "start_ns": 10000, "gap_ns": 200000,
                         "jitter_ns": 200000,
                         "ops": [{"op": "WRITE", "weight": 1, "min_len": 64, "max_len": 1024}]}}
        path = os.path.join(self.tmp, f"round{seed}.long_lived.json")
        with open(path, "w") as f:
            json.dump(scenario, f)
        return path

    def take(self, timeout):
        with self.cond:
            self.cond.wait_for(lambda: self.ready or self.done, timeout)
            if not self.ready:
                return None
            path = self.ready.pop(0)
            self.cond.notify_all()
            return path

    def stop(self):
        with self.cond:
            self.done = True
            self.cond.notify_all()


def main():
    argv, extra = split_passthrough(sys.argv[1:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=["monitor", "inline"], default="monitor")
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--pps", type=int, default=30000, help="replay rate (default 30000)")
    ap.add_argument("--qps", type=int, default=20000,
                    help="QPs of `large` per round (default 20000)")
    ap.add_argument("--packets", type=int, default=60000,
                    help="frames of `large` per round, about (default 60000)")
    ap.add_argument("--seed", type=int, default=1, help="first round's seed")
    ap.add_argument("--long-lived", type=int, default=1000,
                    help="connections that live through the whole run (default 1000; 0: none)")
    ap.add_argument("--long-msgs", type=int, default=50,
                    help="WRITEs per long-lived connection and round (default 50)")
    ap.add_argument("--no-mix", action="store_true",
                    help="only `large`, no other scenario after it in each round")
    ap.add_argument("--idle-timeout", type=float, default=2.0)
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--max-endpoints", type=int, default=131072)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--records", default=None, help="insert-dp's --records (default: a pipe "
                    "this script counts and discards)")
    ap.add_argument("--no-scrape", action="store_true", help="no --http and no /metrics scrapes")
    add_limit_options(ap, warmup_option=True)
    args = ap.parse_args(argv)
    warmup = args.warmup if args.warmup is not None else args.seconds / 4
    refused = missing_prerequisite("network namespaces, packet sockets", (INSERT_DP, INSERT_GEN), log)
    if refused:
        return refused

    # SIGINT/SIGTERM end the run through the normal path (namespaces removed).
    stop_requested = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop_requested.set())

    with tempfile.TemporaryDirectory(prefix="soakdp.") as tmp, Topology() as topo:
        ifaces = ["a1"] if args.mode == "monitor" else ["a1", "b1"]
        dp_argv = [INSERT_DP, args.mode] + sum((["--iface", i] for i in ifaces), []) + [
            "--records", args.records or "-", "--no-view", "--interval", str(args.interval),
            "--idle-timeout", str(args.idle_timeout), "--max-endpoints", str(args.max_endpoints),
            "--workers", str(args.workers)]
        if not args.no_scrape:
            dp_argv += ["--http", f"127.0.0.1:{HTTP_PORT}"]
        dp_argv += extra
        err_path = os.path.join(tmp, "dp.err")
        err = open(err_path, "w")
        dp = subprocess.Popen(topo.cmd("mid", *dp_argv), stderr=err,
                              stdout=subprocess.DEVNULL if args.records else subprocess.PIPE)
        counter = None
        if not args.records:
            counter = RecordCounter(dp.stdout)
            counter.start()
        gen = Captures(tmp, args)
        gen.start()
        scrape_stop = threading.Event()
        scraper = None
        replay = None
        telemetry = None
        samples = []
        failure = None
        try:
            deadline = time.monotonic() + 120
            while True:
                with open(err_path) as f:
                    text = f.read()
                if "running on" in text:
                    break
                if dp.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("insert-dp did not start:\n" + text)
                time.sleep(0.1)
            prefix = re.search(r"telemetry prefix (\S+)", text).group(1)
            telemetry = Telemetry(prefix)
            if not args.no_scrape:
                scraper = Scraper(f"{topo.name}-mid", scrape_stop)
                scraper.start()
            print("seconds,frames,rss_mb,received,endpoints,evicted,records", flush=True)
            start = time.monotonic()
            next_sample = start
            rounds = 0
            stats = {}
            while not stop_requested.is_set():
                now = time.monotonic()
                if dp.poll() is not None:
                    raise RuntimeError(f"insert-dp exited {dp.returncode} during the run")
                if replay is not None and replay.poll() is not None:
                    out = replay.stdout.read()
                    if replay.returncode != 0 or not re.search(r"Failed packets:\s+0\b", out):
                        raise RuntimeError("tcpreplay: " + out)
                    for path in pcaps:
                        os.unlink(path)
                    replay = None
                    rounds += 1
                if replay is None and now - start < args.seconds:
                    pcaps = gen.take(30)
                    if pcaps is None:
                        raise RuntimeError(gen.error or "no capture from insert-gen in 30 s")
                    replay = subprocess.Popen(
                        topo.cmd("a", "tcpreplay", "-q", "-i", "a0", f"--pps={args.pps}", *pcaps),
                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                if now >= next_sample:
                    next_sample += 1.0
                    stats = telemetry.get("/insert/stats")
                    telemetry.get("/insert/top_qps")
                    samples.append((now - start, rx_frames(dp.pid, "a1"), rss_mb(dp.pid),
                                    stats.get("pkts", 0), stats.get("endpoints_live", 0),
                                    stats.get("evicted", 0), counter.lines if counter else 0))
                    print(line(samples[-1], "{:.0f}"), flush=True)
                    if now - start >= args.seconds and replay is None:
                        break
                time.sleep(max(0.0, min(0.1, next_sample - time.monotonic())))
        except (RuntimeError, OSError) as e:
            failure = str(e)
        finally:
            gen.stop()
            scrape_stop.set()
            if replay is not None and replay.poll() is None:
                replay.send_signal(signal.SIGTERM)
                replay.wait(30)
            if telemetry is not None:
                telemetry.close()
            if not terminate(dp, 60):
                failure = failure or "insert-dp did not stop on SIGTERM"
            if counter:
                counter.join(10)
            err.close()
            if scraper:
                scraper.join(10)
            topo.down()
        with open(err_path) as f:
            dp_err = f.read()
        if failure:
            log(failure)
            sys.stderr.write(dp_err)
            return 1
        if dp.returncode != 0:
            log(f"insert-dp exited {dp.returncode}:\n{dp_err}")
            return 1
    if args.csv:
        write_csv(args.csv, "seconds,frames,rss_mb,received,endpoints,evicted,records",
                  (line(s, "{:.1f}") for s in samples))
    if not samples:
        log("no samples")
        return 1
    verdict = RssVerdict([s[2] for s in samples], [s[2] for s in samples if s[0] >= warmup])
    summary = counter.last_record("summary") if counter else None
    last = [l for l in dp_err.splitlines() if "records dropped" in l]
    log(f"{samples[-1][1]} frames sent in {samples[-1][0]:.0f} s ({samples[-1][3]} received), "
        f"{rounds} rounds, {stats.get('evicted', 0)} endpoints evicted, {samples[-1][6]} records; "
        f"{verdict.describe()} (warm-up {warmup:.0f} s)")
    if last:
        log(last[-1].split(": ", 1)[-1])
    if scraper:
        log(f"{scraper.scrapes} /metrics scrapes, {scraper.errors} failed")
    if summary:
        log(f"summary: pkts {summary.get('pkts')}, msgs {summary.get('msgs')}, endpoints "
            f"{summary.get('endpoints')}")
    rc = 0
    if stats.get("table_full_endpoints", 0):
        log(f"{stats['table_full_endpoints']} endpoints refused for a full table: "
            "--max-endpoints is too small for this churn")
        rc = 1
    return verdict.check(args, log) or rc


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""insert-dp monitor --records unix:PATH to insert-correlate --listen PATH, restarted in the
middle (docs/live.md, "Records to the correlator").

    records_socket_test.py INSERT_DP NETNS_SCRIPT INSERT_CORRELATE INSERT_GEN

Topology (scripts/netns-inline.sh): insert-dp monitor on a1 in MID, frames replayed into
a0 from A; the collectors run in this namespace (a Unix socket path reaches across network
namespaces). Three captures of insert-gen's clean_write (seeds 1, 2, 3: other QPs each)
are replayed one after the other:

  1. insert-dp starts before any collector (it says so and goes on), collector 1 comes up,
     capture 1 is replayed: every msg record of it reaches collector 1;
  2. collector 1 stops; capture 2 is replayed while none listens: records wait in a buffer
     of 4096 bytes (--records-buffer), the rest is dropped and counted;
  3. collector 2 comes up on the same path, insert-dp reconnects (saying what it dropped),
     capture 3 is replayed, insert-dp stops: collector 2 has every msg record of capture 3,
     some of capture 2, and insert-dp's summary; insert-dp's last line counts 2
     connections and the drops; no msg record is lost uncounted.

Needs root (network namespaces)."""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

import netns_harness
from netns_harness import Proc, Topology

INSERT_DP, NETNS, CORRELATE, GEN = (os.path.abspath(a) for a in sys.argv[1:5])


SHOWN = []  # insert-dp's stderr, shown with a failure


def fail(msg):
    for lines in SHOWN:
        print("\n".join(lines), file=sys.stderr)
    print("FAIL:", msg, file=sys.stderr)
    sys.exit(1)


def wait_for(cond, timeout, what):
    netns_harness.wait_for(cond, timeout, what, fail)


def msgs_of(pcap, tmp):
    out = os.path.join(tmp, "replay.jsonl")
    r = subprocess.run([INSERT_DP, "replay", pcap, "--records", out, "--quiet", "--", "--no-huge",
                        "-m", "256"], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        fail("replay: " + r.stderr)
    with open(out) as f:
        return sum(json.loads(l)["type"] == "msg" for l in f)


def collector(sock, out):
    c = Proc([CORRELATE, "--listen", sock, "--records", out, "--quiet", "--interval", "0.2"])
    wait_for(lambda: os.path.exists(sock) or c.p.poll() is not None, 10, "the collector")
    if c.p.poll() is not None:
        fail("the collector did not start: " + "\n".join(c.lines))
    return c


def summary(path):
    with open(path) as f:
        return [json.loads(l) for l in f if '"type":"summary"' in l][-1]


def replay(topo, pcap):
    r = subprocess.run(topo.cmd("a", "tcpreplay", "-i", "a0", "--pps=2000", pcap),
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0 or not re.search(r"Failed packets:\s+0\b", r.stdout):
        fail("tcpreplay: " + r.stdout + r.stderr)


def main():
    if os.geteuid() != 0:
        print("needs root (network namespaces)", file=sys.stderr)
        return 77
    with tempfile.TemporaryDirectory() as tmp, Topology(NETNS, "rs") as topo:
        pcaps, msgs = [], []
        for seed in (1, 2, 3):
            pcap = os.path.join(tmp, f"cw{seed}.pcap")
            subprocess.run([GEN, "--scenario", "clean_write", "--seed", str(seed), "--out", pcap,
                            "--truth", pcap + ".truth.json"], check=True, capture_output=True,
                           timeout=120)
            pcaps.append(pcap)
            msgs.append(msgs_of(pcap, tmp))
        sock = os.path.join(tmp, "correlator.sock")
        out1, out2 = os.path.join(tmp, "c1.jsonl"), os.path.join(tmp, "c2.jsonl")
        dp = Proc(topo.cmd("mid", INSERT_DP, "monitor", "--iface", "a1", "--records",
                           "unix:" + sock, "--records-buffer", "4096", "--no-view", "--interval",
                           "1", "--max-endpoints", "4096"))
        SHOWN.append(dp.lines)
        c1 = c2 = None
        try:
            wait_for(lambda: dp.count("running on") or dp.p.poll() is not None, 60, "insert-dp")
            if dp.p.poll() is not None:
                fail("insert-dp exited at start: " + "\n".join(dp.lines))
            if not dp.count("the collector is not up yet?"):
                fail("no line saying the collector is not there: " + "\n".join(dp.lines))
            c1 = collector(sock, out1)
            wait_for(lambda: dp.count("connected again"), 10, "insert-dp to connect")
            replay(topo, pcaps[0])
            time.sleep(1.5)  # every record of capture 1 read (flushed every 0.1 s)
            if c1.stop() != 0:
                fail("collector 1: " + "\n".join(c1.lines))
            replay(topo, pcaps[1])  # nobody listens
            time.sleep(1.5)
            c2 = collector(sock, out2)
            wait_for(lambda: dp.count("connected again") >= 2, 10, "insert-dp to reconnect")
            replay(topo, pcaps[2])
            time.sleep(1.5)
            if dp.stop() != 0:
                fail("insert-dp: " + "\n".join(dp.lines))
            time.sleep(0.5)
            if c2.stop() != 0:
                fail("collector 2: " + "\n".join(c2.lines))
        finally:
            for p in (dp, c1, c2):
                if p and p.p.poll() is None:
                    p.p.kill()
                    p.p.wait(10)
        s1, s2 = summary(out1), summary(out2)
        got1, got2 = s1["inputs"]["msg"], s2["inputs"]["msg"]
        last = [l for l in dp.lines if "connections to the collector" in l]
        m = re.search(r"(\d+) connections to the collector, (\d+) records dropped", last[-1]) \
            if last else None
        if not m:
            fail("no final line with the connections and drops: " + "\n".join(dp.lines))
        connects, dropped = int(m.group(1)), int(m.group(2))
        lost = [l for l in dp.lines if "connection lost" in l]
        again = [l for l in dp.lines if "connected again" in l]
        if got1 != msgs[0]:
            fail(f"collector 1 read {got1} msg records of capture 1's {msgs[0]}")
        if not msgs[2] <= got2 < msgs[1] + msgs[2]:
            fail(f"collector 2 read {got2} msg records: capture 3's {msgs[2]} and part of "
                 f"capture 2's {msgs[1]} expected")
        if connects != 2 or dropped == 0 or not lost or len(again) != 2:
            fail(f"{connects} connections, {dropped} dropped; {lost} {again}")
        if not re.search(r"\(([1-9]\d*) lines dropped meanwhile", again[1]):
            fail("the reconnection does not say what was dropped: " + again[1])
        if got1 + got2 + dropped < sum(msgs):
            fail(f"msg records lost uncounted: {got1} + {got2} read, {dropped} dropped, "
                 f"{sum(msgs)} made")
        if s2["inputs"]["ignored"] < 1:
            fail("insert-dp's summary did not reach collector 2")
        print(f"records to a collector restarted in the middle: {got1} msg records before, "
              f"{got2} after ({msgs} made), {dropped} records dropped while none listened, "
              f"{connects} connections; '{again[1]}'")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""System tests of insert-dp inline/monitor in network namespaces (docs/live.md).

    live_test.py CASE INSERT_DP NETNS_SCRIPT

Topology (scripts/netns-inline.sh): A:a0 - a1:[insert-dp in MID]:b1 - b0:B. Frames are
replayed into a0 with tcpreplay and captured on b0 with tcpdump. Every wait has a deadline;
namespaces carry this process's id and are always removed; every process started is
stopped by its pid. Needs root (CI runs as root).
"""
import json
import re
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

import netns_harness

CASE, INSERT_DP, NETNS = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
ROOT = os.environ.get("INSERT_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "../../.."))
PCAPS = [os.path.join(ROOT, "pcaps", p) for p in
         ("rc_mixed.pcap", "all_opcodes.pcap", "cnp_ud.pcap", "low_sport.pcap", "ipv6_vlan.pcapng")]
TIME_FIELDS = {"t_first_ns", "t_last_ns", "t_ack_ns", "latency_ns", "lat_p50_ns", "lat_p99_ns",
               "lat_max_ns", "t_ns", "wall_s", "mpps"}
# How a run ended: a live run stops by signal, a replay at the end of its file.
STOP_FIELDS = {"interrupted", "signal"}
# Where a frame came in: a live run's port, null in a replay (docs/semantics.md "Messages").
PORT_FIELDS = {"port"}


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    sys.exit(1)


def wait_for(cond, timeout, what):
    netns_harness.wait_for(cond, timeout, what, fail)


# ---- pcap files -----------------------------------------------------------------------
def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        return []
    magic = struct.unpack("<I", data[:4])[0]
    endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    frames, off = [], 24
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack(endian + "IIII", data[off:off + 16])
        frames.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
    return frames


def write_pcap(path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1))  # ns resolution
        t = 1_700_000_000 * 10**9
        for fr in frames:
            t += 10_000
            f.write(struct.pack("<IIII", t // 10**9, t % 10**9, len(fr), len(fr)))
            f.write(fr)


def test_capture(tmp):
    """All bundled captures (pcapng converted by tcpdump) as one pcap with ordered times."""
    frames = []
    for p in PCAPS:
        if p.endswith(".pcapng"):
            conv = os.path.join(tmp, "conv.pcap")
            subprocess.run(["tcpdump", "-r", p, "-w", conv], check=True, capture_output=True)
            p = conv
        frames += [fr for fr in read_pcap(p) if len(fr) >= 14]
    path = os.path.join(tmp, "input.pcap")
    write_pcap(path, frames)
    return path, frames


def flow_key(fr):
    """Unordered IP pair plus ports for IP frames (VLAN tags skipped), else the EtherType."""
    off, et = 12, struct.unpack("!H", fr[12:14])[0]
    while et in (0x8100, 0x88A8) and len(fr) >= off + 6:
        off += 4
        et = struct.unpack("!H", fr[off:off + 2])[0]
    l3 = off + 2
    if et == 0x0800 and len(fr) >= l3 + 20:
        a, b = fr[l3 + 12:l3 + 16], fr[l3 + 16:l3 + 20]
    elif et == 0x86DD and len(fr) >= l3 + 40:
        a, b = fr[l3 + 8:l3 + 24], fr[l3 + 24:l3 + 40]
    else:
        return ("l2", et)
    return ("ip",) + tuple(sorted((a, b)))


# ---- processes ---------------------------------------------------------------------------
class Proc(netns_harness.Proc):
    """netns_harness.Proc whose stop fails the test when the process ignored the signal."""

    def stop(self, sig=signal.SIGTERM, timeout=30):
        rc = super().stop(sig, timeout)
        if self.killed:
            fail(f"{self.argv[4] if len(self.argv) > 4 else self.argv[0]} ignored signal {sig}")
        return rc


def Topology():
    return netns_harness.Topology(NETNS, "il")


def start_dp(topo, mode, ifaces, records, extra=()):
    argv = [INSERT_DP, mode] + sum((["--iface", i] for i in ifaces), []) + \
           ["--records", records, "--no-view", "--interval", "1"] + list(extra)
    dp = Proc(topo.cmd("mid", *argv))
    wait_for(lambda: dp.has("running on") or dp.p.poll() is not None, 60, "insert-dp to start")
    if dp.p.poll() is None and not dp.has("running on"):
        dp.p.kill()
        dp.p.wait(10)
        fail("insert-dp did not start: " + "\n".join(dp.lines))
    if dp.p.poll() is not None:
        fail("insert-dp exited at start: " + "\n".join(dp.lines))
    prefix = [l for l in dp.lines if "telemetry prefix" in l][0].split()[-1]
    return dp, prefix


def check_state_resident(dp, workers):
    """The engines' tables are populated and locked at start (docs/live.md "Time"): no page
    fault is left for the first frame of a new connection."""
    line = [l for l in dp.lines if "endpoints per worker" in l]
    if not line or "resident (locked)" not in line[0]:
        fail("no resident state line at start: " + "\n".join(dp.lines))
    mib = int(re.search(r": (\d+) MiB each", line[0]).group(1))
    with open(f"/proc/{dp.p.pid}/status") as f:
        locked_kib = int(re.search(r"VmLck:\s+(\d+) kB", f.read()).group(1))
    if locked_kib < workers * mib * 1024:
        fail(f"VmLck {locked_kib} kB < {workers} x {mib} MiB of state tables")


def check_rule_hits(offload, ref_summary):
    """The emulated plan's hit counters: every frame from A (port 0) hit exactly one rule,
    UDP/4791 (RoCE and malformed RoCE) the RSS rules, the rest the passthrough rule; B sent
    nothing."""
    ports = sorted(offload)
    a, b = offload[ports[0]], offload[ports[1]]
    if a["steering"] != "emulated":
        fail(f"expected the emulated plan here: {a}")
    def hits(port, action):
        return sum(v for k, v in port.items() if k.endswith("_hits") and
                   action in port[k[:-len("_hits")]])
    udp4791 = ref_summary["pkts"] - ref_summary["non_roce_pkts"]
    got = (hits(a, " RSS("), hits(a, " QUEUE "), hits(b, " RSS(") + hits(b, " QUEUE "))
    if got != (udp4791, ref_summary["non_roce_pkts"], 0):
        fail(f"rule hits (RoCE, passthrough, port B) {got} != {(udp4791, ref_summary['non_roce_pkts'], 0)}")


def telemetry(prefix, command):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(5)
    s.connect(f"/var/run/dpdk/{prefix}/dpdk_telemetry.v2")
    s.recv(4096)
    s.send(command.encode())
    out = json.loads(s.recv(1 << 16).decode())
    s.close()
    return out[command]


# ---- records -----------------------------------------------------------------------------
def load_records(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def comparable(records):
    msgs = sorted(json.dumps({k: v for k, v in r.items() if k not in TIME_FIELDS | PORT_FIELDS},
                             sort_keys=True)
                  for r in records if r["type"] == "msg")
    qps = sorted(json.dumps({k: v for k, v in r.items() if k not in TIME_FIELDS}, sort_keys=True)
                 for r in records if r["type"] == "qp" and r.get("final"))
    summary = [{k: v for k, v in r.items() if k not in TIME_FIELDS | STOP_FIELDS} for r in records
               if r["type"] == "summary"]
    return msgs, qps, summary


def check_stopped_by(records, sig):
    """The live summary names the signal that stopped the run."""
    s = [r for r in records if r["type"] == "summary"][-1]
    if s["interrupted"] is not True or s["signal"] != sig.name:
        fail(f"summary after {sig.name}: interrupted {s['interrupted']}, signal {s['signal']}")


def replay_records(pcap, tmp):
    out = os.path.join(tmp, "replay.jsonl")
    r = subprocess.run([INSERT_DP, "replay", pcap, "--records", out, "--quiet"], capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 0:
        fail("replay failed: " + r.stderr)
    return load_records(out)


def compare_with_replay(live, ref, port_id):
    """The records replay writes, but every live msg's `port` is the one the frames came in
    on (`port_id`), where replay's is null."""
    ports = ({r["port"] for r in live if r["type"] == "msg"},
             {r["port"] for r in ref if r["type"] == "msg"})
    if ports != ({port_id}, {None}):
        fail(f"msg ports (live, replay) {ports}, expected ({{{port_id}}}, {{None}})")
    lm, lq, ls = comparable(live)
    rm, rq, rs = comparable(ref)
    if ls != rs:
        fail(f"summary differs:\n live   {ls}\n replay {rs}")
    if lm != rm:
        fail(f"msg records differ ({len(lm)} live, {len(rm)} replay)")
    if lq != rq:
        diff = [q for q in lq if q not in rq][:3]
        fail(f"final qp records differ ({len(lq)} live, {len(rq)} replay), e.g. {diff}")


def replay_into_a(topo, pcap, pps):
    r = subprocess.run(topo.cmd("a", "tcpreplay", "-i", "a0", f"--pps={pps}", pcap),
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0 or not re.search(r"Failed packets:\s+0\b", r.stdout):
        fail("tcpreplay: " + r.stdout + r.stderr)


# ---- cases -------------------------------------------------------------------------------
def case_inline(workers):
    with tempfile.TemporaryDirectory() as tmp, Topology() as topo:
        pcap, sent = test_capture(tmp)
        cap = os.path.join(tmp, "b.pcap")
        td = Proc(topo.cmd("b", "tcpdump", "-i", "b0", "-U", "-s", "0", "-w", cap))
        try:
            wait_for(lambda: td.has("listening on"), 20, "tcpdump")
            rec = os.path.join(tmp, "live.jsonl")
            dp, prefix = start_dp(topo, "inline", ["a1", "b1"], rec, ["--workers", str(workers)])
            try:
                check_state_resident(dp, workers)
                replay_into_a(topo, pcap, 2000)
                wait_for(lambda: len(read_pcap(cap)) >= len(sent), 30, f"{len(sent)} frames at B")
                stats = telemetry(prefix, "/insert/stats")
                offload = telemetry(prefix, "/insert/offload")
                ports = telemetry(prefix, "/insert/ports")
            finally:
                rc = dp.stop(signal.SIGTERM)
            if rc != 0:
                fail(f"insert-dp inline exited {rc}: " + "\n".join(dp.lines))
        finally:
            td.stop(signal.SIGTERM)
        got = read_pcap(cap)
        # The kernel hands af_packet the outer VLAN tag as metadata and DPDK 22.11's
        # af_packet PMD re-inserts it with TPID 0x8100 whatever it was: an 802.1ad (0x88a8)
        # outer tag crosses as 802.1Q. That is the only change allowed, and only in the
        # outer TPID (docs/live.md, "Known limits").
        sent = [fr[:12] + b"\x81\x00" + fr[14:] if fr[12:14] == b"\x88\xa8" else fr for fr in sent]
        if len(got) != len(sent):
            fail(f"{len(got)} frames at B, {len(sent)} sent (duplicates or losses)")
        if sorted(got) != sorted(sent):
            fail("frames at B are not byte-identical to the frames sent")
        flows_sent, flows_got = {}, {}
        for fr in sent:
            flows_sent.setdefault(flow_key(fr), []).append(fr)
        for fr in got:
            flows_got.setdefault(flow_key(fr), []).append(fr)
        if flows_sent != flows_got:
            fail("per-flow order changed")
        if workers == 1 and got != sent:
            fail("one worker: global order changed")
        ref = replay_records(pcap, tmp)
        ref_summary = [r for r in ref if r["type"] == "summary"][0]
        for k in ("pkts", "roce_pkts", "non_roce_pkts"):
            if stats[k] != ref_summary[k]:
                fail(f"/insert/stats {k} {stats[k]} != replay {ref_summary[k]}")
        if stats["tx_dropped"] != 0 or stats["rx_missed"] != 0:
            fail(f"drops: {stats}")
        if stats["table_full"] != 0 or stats["table_full_endpoints"] != 0:
            fail(f"table_full in /insert/stats: {stats}")
        check_rule_hits(offload, ref_summary)
        # Every frame was sent into A: it came in on a1, the first --iface.
        compare_with_replay(load_records(rec), ref, ports["net_af_packet0"]["port_id"])
        check_stopped_by(load_records(rec), signal.SIGTERM)
        print(f"inline, {workers} worker(s): {len(sent)} frames forwarded once, byte-identical, "
              f"per-flow order kept; records equal replay's ({ref_summary['msgs']} msgs)")


def case_monitor():
    with tempfile.TemporaryDirectory() as tmp, Topology() as topo:
        pcap, sent = test_capture(tmp)
        rec = os.path.join(tmp, "live.jsonl")
        dp, prefix = start_dp(topo, "monitor", ["a1"], rec)
        try:
            # Slow enough (over 2 s) that --interval 1 reports reach the top-QP boards.
            replay_into_a(topo, pcap, 100)
            wait_for(lambda: telemetry(prefix, "/insert/stats")["pkts"] >= len(sent), 30,
                     "the monitor to see every frame")
            ports = telemetry(prefix, "/insert/ports")
            offload = telemetry(prefix, "/insert/offload")
            top = telemetry(prefix, "/insert/top_qps")
            workers = telemetry(prefix, "/insert/workers")
        finally:
            rc = dp.stop(signal.SIGINT)
        if rc != 0:
            fail(f"insert-dp monitor exited {rc}: " + "\n".join(dp.lines))
        port = ports["net_af_packet0"]
        if port["opackets"] != 0:
            fail(f"monitor transmitted: {port}")
        if port["ipackets"] != len(sent):
            fail(f"port counted {port['ipackets']} frames, {len(sent)} sent")
        o = offload["net_af_packet0"]
        if o["steering"] != "emulated" or o["refused"] != o["rules"] or o["rules"] != 7:
            fail(f"af_packet has no rte_flow: expected 7 refused and emulated, got {o}")
        if "qpn" not in top.get("qp0", {}) or "worker0" not in workers:
            fail(f"top_qps/workers empty: {top} {workers}")
        if not any("refused 7 of 7 rte_flow rules" in l for l in dp.lines):
            fail("no log line for the refused rules")
        compare_with_replay(load_records(rec), replay_records(pcap, tmp), port["port_id"])
        check_stopped_by(load_records(rec), signal.SIGINT)
        print(f"monitor: {len(sent)} frames observed, nothing sent, records equal replay's")


def write_only_frame(src, dst, qpn, psn):
    """An RC RDMA WRITE Only of 64 bytes with its RETH (va 0x10000, rkey 0x1234) and ICRC."""
    payload = bytes(64)
    bth = struct.pack("!BBHB3sB3s", 0x0A, 0, 0xFFFF, 0, qpn.to_bytes(3, "big"), 0x80,
                      psn.to_bytes(3, "big"))
    l4 = bth + struct.pack("!QII", 0x10000, 0x1234, len(payload)) + payload + bytes(4)
    udp = struct.pack("!HHHH", 49152, 4791, 8 + len(l4), 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp) + len(l4), 0, 0x4000, 64, 17, 0,
                     socket.inet_aton(src), socket.inet_aton(dst))
    return bytes.fromhex("020000000002020000000001") + b"\x08\x00" + ip + udp + l4


def case_quiet_link():
    """A message never answered on a link that then goes quiet: its endpoint goes idle and
    is evicted on the clock (--idle-timeout 1), and the msg record is written while
    insert-dp runs on, not at its stop (docs/live.md "Time")."""
    with tempfile.TemporaryDirectory() as tmp, Topology() as topo:
        pcap = os.path.join(tmp, "unanswered.pcap")
        write_pcap(pcap, [write_only_frame("10.1.0.1", "10.1.0.2", 0x123, 5)])
        rec = os.path.join(tmp, "live.jsonl")
        dp, _ = start_dp(topo, "monitor", ["a1"], rec, ["--idle-timeout", "1"])
        try:
            sent = time.monotonic()
            replay_into_a(topo, pcap, 10)
            msgs = []

            def msg_written():
                msgs[:] = [r for r in load_records(rec) if r["type"] == "msg"]
                return bool(msgs)
            # Idle for more than 1 s, then the next tick (every 125 ms) plus the quiet
            # check's 10 ms lag and the records' flush period (100 ms).
            wait_for(msg_written, 5, "the unanswered message's record while insert-dp runs")
            took = time.monotonic() - sent
            if dp.p.poll() is not None:
                fail("insert-dp exited before its record came")
        finally:
            rc = dp.stop(signal.SIGINT)
        if rc != 0:
            fail(f"insert-dp monitor exited {rc}: " + "\n".join(dp.lines))
        m = msgs[0]
        want = {"src_ip": "10.1.0.1", "dst_ip": "10.1.0.2", "dst_qpn": 0x123, "op": "WRITE",
                "psn_first": 5, "bytes": 64, "rkey": 0x1234, "t_ack_ns": None,
                "status": "incomplete", "src_mac": "02:00:00:00:00:01", "ttl": 64, "port": 0}
        if {k: m.get(k) for k in want} != want:
            fail(f"msg record {m}, expected {want}")
        if took < 1.0:
            fail(f"the record came {took:.2f} s after the frame, before the idle timeout")
        evicted = [r for r in load_records(rec) if r["type"] == "qp" and r.get("final")]
        if not evicted or evicted[0]["qpn"] != 0x123:
            fail(f"no final qp record for the evicted endpoint: {evicted}")
        print(f"quiet link: the unanswered message's record {took:.2f} s after its frame, "
              "insert-dp still running")


def case_shutdown_under_load():
    with tempfile.TemporaryDirectory() as tmp, Topology() as topo:
        pcap, _ = test_capture(tmp)
        rec = os.path.join(tmp, "live.jsonl")
        dp, prefix = start_dp(topo, "monitor", ["a1"], rec, ["--workers", "2"])
        load = subprocess.Popen(topo.cmd("a", "tcpreplay", "-i", "a0", "--topspeed", "--loop=100000", pcap),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            # The capture looped: mostly retransmissions to the engine, at full speed.
            wait_for(lambda: telemetry(prefix, "/insert/stats")["pkts"] > 50000, 60, "load")
            rc = dp.stop(signal.SIGINT, timeout=60)  # under load
        finally:
            if dp.p.poll() is None:  # a failed wait: never leave insert-dp behind
                dp.p.kill()
                dp.p.wait(10)
            load.send_signal(signal.SIGTERM)
            load.wait(30)
        if rc != 0:
            fail(f"insert-dp exited {rc} on SIGINT: " + "\n".join(dp.lines))
        records = load_records(rec)  # every line must be complete JSON
        summary = [r for r in records if r["type"] == "summary"]
        if len(summary) != 1:
            fail("no single summary record")
        msgs = sum(1 for r in records if r["type"] == "msg")
        if msgs != summary[0]["msgs"] or msgs == 0:
            fail(f"{msgs} msg records written, summary says {summary[0]['msgs']}")
        finals = sum(1 for r in records if r["type"] == "qp" and r.get("final"))
        if finals == 0:
            fail("no final qp records")
        last = [l for l in dp.lines if "records dropped" in l]
        if not last or not re.search(r"records dropped 0\b", last[-1]):
            fail("records dropped: " + str(last))
        print(f"shutdown under load: {msgs} msg records == summary msgs, {finals} final qp records")


def case_bad_config():
    with Topology() as topo:
        mid = topo.cmd("mid")  # a1/b1: MTU 9000 interfaces nobody else uses
        checks = [
            ([INSERT_DP, "inline", "--iface", "insert-nope0", "--iface", "insert-nope1"],
             "unknown interface insert-nope0"),
            (mid + [INSERT_DP, "inline", "--iface", "a1"], "needs exactly two ports"),
            (mid + ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", INSERT_DP, "monitor",
                    "--iface", "a1"], "no permission to open packet sockets"),
            (mid + ["unshare", "-m", "sh", "-c",
                    f"mount -t tmpfs none /sys/kernel/mm/hugepages && exec {INSERT_DP} monitor --iface a1 --hugepages"],
             "hugepages missing"),
            (mid + [INSERT_DP, "monitor", "--iface", "a1", "--offload", "require", "--", "--no-huge"],
             "--offload require"),
            ([INSERT_DP, "monitor", "--iface", "lo", "--workers", "0"], "--workers"),
            ([INSERT_DP, "monitor", "--port", "0000:00:1f.7"], "no PCI device 0000:00:1f.7"),
            ([INSERT_DP, "inline", "--port", "eth0", "--port", "0000:00:1f.7"],
             "--port eth0 is not a PCI address"),
            ([INSERT_DP, "monitor", "--vdev", "net_null0", "--http", "9464"],
             "--http 9464: expected ADDR:PORT"),
            ([INSERT_DP, "monitor", "--vdev", "net_null0", "--telemetry-prefix", "a/b"],
             "--telemetry-prefix 'a/b'"),
            ([INSERT_DP, "monitor", "--vdev", "net_null0", "--telemetry-prefix", "p", "--",
              "--file-prefix=q"], "give one of them"),
        ]
        # An address in use, and a telemetry prefix a running insert-dp serves.
        busy = socket.socket()
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        checks.append(([INSERT_DP, "monitor", "--vdev", "net_null0", "--http",
                        f"127.0.0.1:{busy.getsockname()[1]}"], "Address already in use"))
        prefix = f"insert-live-test-{os.getpid()}"
        running = subprocess.Popen([INSERT_DP, "monitor", "--vdev", "net_ring0", "--quiet",
                                    "--max-endpoints", "1024", "--telemetry-prefix", prefix,
                                    "--", "--no-huge"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: os.path.exists(f"/var/run/dpdk/{prefix}/dpdk_telemetry.v2"), 30,
                 "the telemetry socket of --telemetry-prefix")
        checks.append(([INSERT_DP, "monitor", "--vdev", "net_ring1", "--telemetry-prefix", prefix],
                       f"--telemetry-prefix {prefix}: in use by a running process"))
        try:
            run_checks(checks)
        finally:
            busy.close()
            running.send_signal(signal.SIGTERM)
            running.wait(timeout=30)
        if running.returncode != 0 or os.path.exists(f"/var/run/dpdk/{prefix}"):
            fail(f"the first insert-dp: exit {running.returncode}, its directory left")


def run_checks(checks):
    for argv, text in checks:
        t0 = time.monotonic()
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        if r.returncode != 2:
            fail(f"{argv}: exit {r.returncode}, expected 2; stderr: {r.stderr}")
        if len(lines) != 1 or text not in lines[0]:
            fail(f"{argv}: expected one line with '{text}', got: {lines}")
        if r.stdout:
            fail(f"{argv}: wrote to stdout: {r.stdout!r}")
        print(f"ok ({time.monotonic() - t0:.1f} s): {lines[0]}")


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("needs root (network namespaces)", file=sys.stderr)
        sys.exit(77)
    {"inline_netns": lambda: case_inline(1),
     "inline_netns_2workers": lambda: case_inline(2),
     "monitor_netns": case_monitor,
     "quiet_link": case_quiet_link,
     "shutdown_under_load": case_shutdown_under_load,
     "bad_config": case_bad_config}[CASE]()

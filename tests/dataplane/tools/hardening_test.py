#!/usr/bin/env python3
"""insert-dp tried as a hostile or careless user would (suites 'eal'; 'system' for options and log).

usage: hardening_test.py CASE INSERT_DP MAKE_PIPELINE_PCAPS [INSERT_TRACE]

Each case runs the real binaries on real files and checks the exact behaviour
docs/pipeline.md and docs/live.md promise; each is a defect such a user found, kept fixed.
Cases: input, signals, options, eal, outputs, cnp, spray, limits, log.
"""
import glob
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay_test import EAL, TIMEOUT, fail, run_checked  # noqa: E402


def one_error_line(p, needle, status=2, label=""):
    lines = p.stderr.strip().splitlines()
    if p.returncode != status or len(lines) != 1 or needle not in lines[0]:
        fail(f"{label}: expected exit {status} and one line with {needle!r}; got exit "
             f"{p.returncode}, stderr {p.stderr!r}")


def start_blocked(cmd):
    """Starts `cmd` writing to a pipe and reads its first line: the run is under way, and
    since nothing more is read it soon waits on the full pipe - it is still running whatever
    this machine's speed, until finish() reads the rest."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = proc.stdout.readline()
    if not first:
        fail(f"{' '.join(cmd)} wrote nothing: {proc.communicate(timeout=TIMEOUT)[1]!r}")
    return proc, first


def finish(proc):
    """The rest of a start_blocked() process's stdout (after the buffered first line: not
    communicate(), which reads the pipe past Python's buffer) and its stderr; waits for it."""
    err = []
    reader = threading.Thread(target=lambda: err.append(proc.stderr.read()))
    reader.start()
    out = proc.stdout.read()
    proc.wait(timeout=TIMEOUT)
    reader.join()
    return out, err[0]


def big_capture(d, name):
    """A copy of many.pcap (63 MB, 120k frames), which a run may change."""
    path = os.path.join(d, name)
    with open(os.path.join(d, "many.pcap"), "rb") as src, open(path, "wb") as dst:
        dst.write(src.read())
    return path


def case_input(insert_dp, d):
    """Never destroy input; refuse an output that is the input; survive a shrinking file."""
    pcap = os.path.join(d, "stray.pcap")
    size = os.path.getsize(pcap)
    link = os.path.join(d, "link.jsonl")
    os.symlink(pcap, link)
    hard = os.path.join(d, "hard.jsonl")
    os.link(pcap, hard)
    for out in (pcap, link, hard):
        p = run_checked([insert_dp, "replay", pcap, "--records", out, *EAL])
        one_error_line(p, "is the input", label=f"--records {out}")
        if os.path.getsize(pcap) != size or p.stdout:
            fail(f"--records {out}: the input changed ({os.path.getsize(pcap)} bytes) or stdout written")

    # A capture truncated while replay reads it: one line naming it, exit 2, no SIGBUS.
    big = big_capture(d, "shrinking.pcap")
    proc, first = start_blocked([insert_dp, "replay", big, "--quiet", "--workers", "2", "--records", "-", *EAL])
    os.truncate(big, 1_000_000)
    out, err = finish(proc)
    if proc.returncode != 2 or "shrank" not in err or "shrinking.pcap" not in err:
        fail(f"replay of a shrinking capture: exit {proc.returncode}, stderr {err!r}")
    if json.loads((first + out).splitlines()[-1])["type"] != "summary":
        fail("replay of a shrinking capture: no summary record last")

    # The same under decode.
    big = big_capture(d, "shrinking2.pcap")
    proc, _ = start_blocked([insert_dp, "decode", big])
    os.truncate(big, 1_000_000)
    _, err = finish(proc)
    if proc.returncode != 2 or "shrank" not in err:
        fail(f"decode of a shrinking capture: exit {proc.returncode}, stderr {err!r}")
    print("input: outputs that are the input refused, shrinking captures survived (replay, decode)")


def case_signals(insert_dp, d):
    """Every stop leaves whole lines and a summary saying so; exit 128 + the signal."""
    big = big_capture(d, "long.pcap")
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
        proc, first = start_blocked([insert_dp, "replay", big, "--quiet", "--workers", "2", "--records", "-", *EAL])
        proc.send_signal(sig)
        rest, err = finish(proc)
        if glob.glob(f"/var/run/dpdk/insert-dp-replay-{proc.pid}-*"):
            fail(f"{sig.name}: runtime directory left behind")
        if proc.returncode != 128 + int(sig):
            fail(f"{sig.name}: exit {proc.returncode}, expected {128 + int(sig)}; stderr {err!r}")
        data = first + rest
        if not data.endswith("\n"):
            fail(f"{sig.name}: the records end mid-line")
        recs = [json.loads(line) for line in data.splitlines()]
        s = recs[-1]
        if s["type"] != "summary" or s["interrupted"] is not True or s["signal"] != sig.name:
            fail(f"{sig.name}: summary {s}")
        if s["msgs"] != sum(1 for r in recs if r["type"] == "msg") or f"interrupted by {sig.name}" not in err:
            fail(f"{sig.name}: msg records do not match the summary, or no line says so: {err!r}")
    # decode: whole rows, one line naming the signal, exit 128 + the signal.
    proc, first = start_blocked([insert_dp, "decode", big])
    proc.send_signal(signal.SIGHUP)
    rest, err = finish(proc)
    data = first + rest
    if proc.returncode != 128 + int(signal.SIGHUP) or "interrupted by SIGHUP" not in err:
        fail(f"decode, SIGHUP: exit {proc.returncode}, stderr {err!r}")
    if not data.endswith("\n") or any(line.count(",") != 22 for line in data.splitlines()):
        fail("decode, SIGHUP: a row was cut")
    # A run to its end says it was not interrupted.
    p = run_checked([insert_dp, "replay", os.path.join(d, "stray.pcap"), "--quiet", "--records", "-", *EAL])
    s = json.loads(p.stdout.splitlines()[-1])
    if p.returncode != 0 or s["interrupted"] is not False or s["signal"] is not None:
        fail(f"uninterrupted run: exit {p.returncode}, summary {s}")
    print("signals: whole lines and an interrupted summary for SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2")


def case_options(insert_dp, d, insert_trace=None):
    """Ranges and names are validated: one line naming the option, exit 2, nothing run."""
    pcap = os.path.join(d, "stray.pcap")
    cases = [
        (["replay", pcap, "--interval", "nan"], "--interval"),
        (["replay", pcap, "--interval", "1e-9"], "--interval"),
        (["replay", pcap, "--interval", "inf"], "--interval"),
        (["replay", pcap, "--idle-timeout", "nan"], "--idle-timeout"),
        (["replay", pcap, "--idle-timeout", "-1"], "--idle-timeout"),
        (["replay", pcap, "--records", ""], "--records"),
        (["monitor", "--vdev", "net_null0", "--interval", "nan"], "--interval"),
        (["monitor", "--vdev", "net_null0", "--duration", "nan"], "--duration"),
        (["monitor", "--vdev", "net_null0", "--records", ""], "--records"),
        (["inline", "--vdev", "net_null0", "--vdev", "net_null0"], "given twice"),
        (["bench", "--seconds", "nan"], "--seconds"),
    ]
    for args, needle in cases:
        p = subprocess.run([insert_dp, *args], capture_output=True, text=True, timeout=TIMEOUT)
        one_error_line(p, needle, label=" ".join(args))
        if p.stdout:
            fail(f"{' '.join(args)}: wrote to stdout")
    # The same Linux interface twice (a dummy interface: its MTU is ordinary).
    if subprocess.run(["ip", "link", "add", "insdup0", "type", "dummy"], capture_output=True).returncode == 0:
        try:
            p = subprocess.run([insert_dp, "inline", "--iface", "insdup0", "--iface", "insdup0", "--duration", "1"],
                               capture_output=True, text=True, timeout=TIMEOUT)
            one_error_line(p, "--iface insdup0 given twice", label="inline --iface x --iface x")
        finally:
            subprocess.run(["ip", "link", "del", "insdup0"], capture_output=True)
    if insert_trace:
        for args, needle in ((["-p", "0"], "-p"), (["--duration", "nan"], "--duration")):
            p = subprocess.run([insert_trace, *args], capture_output=True, text=True, timeout=60)
            one_error_line(p, needle, label="insert-trace " + " ".join(args))
    print("options: nan, 1e-9, inf, negative, empty names and duplicate ports refused")


def case_eal(insert_dp, d):
    """Bad EAL options and start-up failures: one line, nothing on stdout, outputs untouched."""
    pcap = os.path.join(d, "stray.pcap")
    keep = os.path.join(d, "keep.jsonl")
    with open(keep, "w") as f:
        f.write('{"precious":true}\n')
    p = run_checked([insert_dp, "replay", pcap, "--records", keep, "--", "--bogus-eal-option"])
    one_error_line(p, "bad EAL options: unrecognized option '--bogus-eal-option'", label="bogus EAL option")
    if p.stdout or open(keep).read() != '{"precious":true}\n':
        fail(f"bogus EAL option: {len(p.stdout.splitlines())} lines on stdout, --records file now "
             f"{open(keep).read()!r}")
    p = subprocess.run([insert_dp, "monitor", "--vdev", "net_null0", "--records", keep, "--", "--bogus-eal-option"],
                       capture_output=True, text=True, timeout=TIMEOUT)
    one_error_line(p, "bad EAL options", label="monitor with a bogus EAL option")
    if p.stdout or open(keep).read() != '{"precious":true}\n':
        fail("monitor with a bogus EAL option: stdout written or --records file touched")

    # A file prefix in use by a running process: its reason, not "Success"; the running
    # process keeps its runtime directory and finishes normally.
    prefix = f"insert-hardening-{os.getpid()}"
    first, _ = start_blocked([insert_dp, "replay", os.path.join(d, "many.pcap"), "--quiet", "--records", "-",
                              "--", "--no-huge", "-m", "256", f"--file-prefix={prefix}"])
    second = subprocess.run([insert_dp, "replay", pcap, "--quiet", "--", "--no-huge", "-m", "256",
                             f"--file-prefix={prefix}"], capture_output=True, text=True, timeout=TIMEOUT)
    running = os.path.isdir(f"/var/run/dpdk/{prefix}")
    finish(first)
    one_error_line(second, "Is another primary process running?", status=1, label="file-prefix clash")
    if "Success" in second.stderr or second.stdout:
        fail(f"file-prefix clash: {second.stderr!r}")
    if first.returncode != 0 or not running:
        fail(f"file-prefix clash: the running replay lost its runtime directory ({running}) "
             f"or failed ({first.returncode})")

    # A run killed by SIGKILL leaves its runtime directory; the next run removes it.
    stale = f"/var/run/dpdk/insert-dp-replay-{dead_pid()}-0-123456"
    os.makedirs(stale, exist_ok=True)
    run_checked([insert_dp, "replay", pcap, "--quiet", *EAL])
    if os.path.exists(stale):
        fail(f"stale runtime directory {stale} of a dead process was left behind")
    print("eal: bad options exit 2 with one line, outputs untouched, prefix clash explained, stale dirs removed")


def case_log(insert_dp, d):
    """Component diagnostics are DPDK log lines (dataplane/common/log.hpp): on stderr, never
    among the records on stdout (DPDK 22.11 logs to stdout once EAL is up), and each
    component's level is EAL's --log-level. The line: af_packet has no rte_flow, so a
    monitor on a veth logs that its rules are emulated (a veth pair of the root namespace,
    made and removed here: needs root)."""
    if os.geteuid() != 0:
        print("needs root (a veth pair)", file=sys.stderr)
        sys.exit(77)
    iface = f"inslog{os.getpid() % 100000}"
    subprocess.run(["ip", "link", "add", iface, "type", "veth", "peer", "name", iface + "p"],
                   check=True, timeout=30)
    try:
        subprocess.run(["ip", "link", "set", iface, "up"], check=True, timeout=30)

        def monitor(*eal):
            return subprocess.run([insert_dp, "monitor", "--iface", iface, "--max-endpoints", "4096",
                                   "--duration", "1", "--quiet", "--records", "-", "--", *eal],
                                  capture_output=True, text=True, timeout=TIMEOUT)
        expected = "insert.offload: port 0 (net_af_packet) refused 7 of 7 rte_flow rules"
        p = monitor()
        if p.returncode != 0:
            fail(f"monitor on {iface}: exit {p.returncode}: {p.stderr!r}")
        if not any(l.startswith(expected) for l in p.stderr.splitlines()):
            fail(f"no {expected!r} line on stderr: {p.stderr!r}")
        for line in p.stdout.splitlines():
            try:
                json.loads(line)
            except ValueError:
                fail(f"stdout carries a line that is no record: {line!r}")
        if not p.stdout or json.loads(p.stdout.splitlines()[-1]).get("type") != "summary":
            fail(f"the records on stdout do not end with the summary: {p.stdout[-300:]!r}")
        p = monitor("--log-level=insert.offload:error")
        if p.returncode != 0 or expected in p.stderr + p.stdout:
            fail(f"--log-level=insert.offload:error kept the warning: {p.stderr!r}")
    finally:
        subprocess.run(["ip", "link", "del", iface], capture_output=True, timeout=30)
    print("log: component lines on stderr, records alone on stdout, levels per component")


def dead_pid():
    pid = 4_000_000
    while os.path.exists(f"/proc/{pid}"):
        pid -= 1
    return pid


def corrupt_pcapng(src, dst):
    """`src` with the length of its third block made 7 (not a multiple of 4): corrupt."""
    data = bytearray(open(src, "rb").read())
    off = 0
    for _ in range(2):
        off += struct.unpack_from("<I", data, off + 4)[0]
    struct.pack_into("<I", data, off + 4, 7)
    open(dst, "wb").write(bytes(data))


def case_outputs(insert_dp, d):
    """Outputs that cannot be written, closed pipes, FIFOs, corrupt input: clear failures."""
    pcap = os.path.join(d, "stray.pcap")
    # The terminal summary into a full device.
    with open("/dev/full", "w") as full:
        p = subprocess.run([insert_dp, "replay", pcap, *EAL], stdout=full, stderr=subprocess.PIPE, text=True,
                           timeout=TIMEOUT)
    one_error_line(p, "writing the summary to stdout failed", status=1, label="replay > /dev/full")
    # decode of a FIFO with no writer: refused at once.
    fifo = os.path.join(d, "capture.fifo")
    os.mkfifo(fifo)
    p = subprocess.run([insert_dp, "decode", fifo], capture_output=True, text=True, timeout=20)
    one_error_line(p, "not a regular file", label="decode FIFO")
    # decode | head -1: stops at once with one line, not killed by SIGPIPE.
    big = os.path.join(d, "many.pcap")
    proc = subprocess.Popen([insert_dp, "decode", big], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=TIMEOUT)
    if proc.returncode != 1 or "Broken pipe" not in err or len(err.strip().splitlines()) != 1:
        fail(f"decode | head -1: exit {proc.returncode}, stderr {err!r}")
    # A corrupt pcapng: exit 2 with nothing on stdout, as decode does.
    root = os.environ.get("INSERT_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "../../.."))
    bad = os.path.join(d, "corrupt.pcapng")
    corrupt_pcapng(os.path.join(root, "pcaps", "ipv6_vlan.pcapng"), bad)
    p = run_checked([insert_dp, "replay", bad, "--quiet", "--records", "-", *EAL])
    one_error_line(p, "corrupt block length", label="replay of a corrupt pcapng")
    if p.stdout:
        fail(f"replay of a corrupt pcapng wrote {len(p.stdout.splitlines())} lines to stdout")
    print("outputs: /dev/full, FIFO, closed pipe and corrupt pcapng fail with one line")


def case_cnp(insert_dp, d):
    """A CNP storm gives one `cnp` event per QP and second, with the count (not 30000)."""
    pcap = os.path.join(d, "cnp_storm.pcap")
    for workers in (1, 2):
        p = run_checked([insert_dp, "replay", pcap, "--quiet", "--workers", str(workers), "--records", "-", *EAL])
        recs = [json.loads(line) for line in p.stdout.splitlines()]
        cnps = sorted((e for e in recs if e["type"] == "event" and e["kind"] == "cnp"), key=lambda e: e["t_ns"])
        if [e["count"] for e in cnps] != [10000, 10000, 10000] or {e["qpn"] for e in cnps} != {0x600}:
            fail(f"--workers {workers}: cnp events {[(e['qpn'], e.get('count')) for e in cnps][:5]}")
        base = 1_700_000_000 * 10**9
        if [e["t_ns"] - base for e in cnps][:1] != [0]:
            fail(f"--workers {workers}: the first window's event should carry its first CNP's time")
        q = [r for r in recs if r["type"] == "qp" and r["ip"] == "10.6.0.1" and r["qpn"] == 0x600]
        if len(q) != 1 or q[0]["cnps"] != 30000:
            fail(f"--workers {workers}: the qp record counts {q[0]['cnps'] if q else None} CNPs")
        if sum(1 for r in recs if r["type"] == "msg") != 10:
            fail(f"--workers {workers}: the connection beside the storm lost messages")
    print("cnp: 30000 CNPs -> 3 events of 10000, the qp record counts 30000")


# docs/semantics.md "Events": the stated bound of `sources` once it is an estimate.
SOURCES_BOUND = 0.2


def case_spray(insert_dp, d):
    """Issue 37: 200000 CNPs to one QP, each from a spoofed source IP of its own (and 20000
    NAKs to another QP from 20000 more) - one event record per QP, kind and second, with its
    count and distinct sources, the same for 1 and 2 workers; were 240000 records (a part,
    hence an event, per source)."""
    pcap = os.path.join(d, "spray.pcap")
    base = 1_700_000_000
    outcomes = []
    for workers in (1, 2):
        p = run_checked([insert_dp, "replay", pcap, "--quiet", "--workers", str(workers),
                         "--records", "-", *EAL])
        if p.returncode != 0:
            fail(f"--workers {workers}: exit {p.returncode}: {p.stderr.strip()}")
        recs = [json.loads(line) for line in p.stdout.splitlines()]
        label = f"--workers {workers}"
        events = [r for r in recs if r["type"] == "event"]
        # The capture spans two windows: [0.5 s, 1.5 s) after `base`.
        by_kind = {}
        for e in events:
            by_kind.setdefault((e["kind"], e["ip"], e["qpn"]), []).append(e)
        expected = {("cnp", "10.20.0.1", 0x2000): 100000, ("nak", "10.20.0.2", 0x2001): 10000,
                    ("unknown_qp", "10.20.0.2", 0x2001): 10000}
        if sorted(by_kind) != sorted(expected) or len(events) != 6:
            fail(f"{label}: {len(events)} event records {sorted(by_kind)}, expected 2 each of "
                 f"{sorted(expected)}")
        for key, per_window in expected.items():
            windows = sorted(by_kind[key], key=lambda e: e["window_ns"])
            if [e["window_ns"] for e in windows] != [base * 10**9, (base + 1) * 10**9]:
                fail(f"{label}: {key} windows {[e['window_ns'] for e in windows]}")
            if [e["count"] for e in windows] != [per_window, per_window]:
                fail(f"{label}: {key} counts {[e['count'] for e in windows]}, expected {per_window} each")
            for e in windows:
                if e["sources_exact"] or abs(e["sources"] - e["count"]) > SOURCES_BOUND * e["count"]:
                    fail(f"{label}: {key} sources {e['sources']} (exact {e['sources_exact']}) for "
                         f"{e['count']} distinct sources: beyond the stated {SOURCES_BOUND:.0%}")
            total = sum(e["sources"] for e in windows)
            if abs(total - 2 * per_window) > SOURCES_BOUND * 2 * per_window:
                fail(f"{label}: {key} sources {total} in all for {2 * per_window}")
        cnp = by_kind[("cnp", "10.20.0.1", 0x2000)]
        if sum(e["count"] for e in cnp) != 200000:
            fail(f"{label}: cnp counts sum to {sum(e['count'] for e in cnp)}")
        if min(e["t_ns"] for e in cnp) != base * 10**9 + 500_000_000:
            fail(f"{label}: the first window's t_ns is not its first CNP's")
        q = [r for r in recs if r["type"] == "qp" and r["ip"] == "10.20.0.1"]
        if len(q) != 1 or q[0]["cnps"] != 200000 or q[0]["pkts"] != 200000:
            fail(f"{label}: the sprayed QP's record {q}")
        n = [r for r in recs if r["type"] == "qp" and r["ip"] == "10.20.0.2"]
        if len(n) != 1 or n[0]["naks"]["seq"] != 20000:
            fail(f"{label}: the NAKed QP's record {n}")
        summary = dict(recs[-1])
        for wall_clock in ("wall_s", "mpps"):
            summary.pop(wall_clock)
        outcomes.append((sorted(json.dumps(r, sort_keys=True) for r in recs[:-1]), summary))
    if outcomes[0] != outcomes[1]:
        only = sorted(set(outcomes[0][0]) ^ set(outcomes[1][0]))[:2]
        fail(f"records differ between 1 and 2 workers (SPEC invariant 1), e.g. {only}")
    print("spray: 200000 spoofed-source CNPs and 20000 NAKs -> 6 event records, the same for "
          "1 and 2 workers; sources " +
          ", ".join(str(e["sources"]) for e in sorted(
              (json.loads(r) for r in outcomes[0][0] if '"event"' in r),
              key=lambda e: (e["kind"], e["window_ns"]))))


def case_limits(insert_dp, d):
    """A full table is in the summary; memory options that do not fit are refused up front."""
    recs = [json.loads(line) for line in run_checked(
        [insert_dp, "replay", os.path.join(d, "hostile.pcap"), "--quiet", "--workers", "2",
         "--max-endpoints", "4", "--records", "-", *EAL]).stdout.splitlines()]
    t = recs[-1].get("table_full")
    if not t or t["pkts"] == 0 or t["endpoints"] == 0 or t["endpoints"] > t["pkts"]:
        fail(f"a 4-endpoint table: summary table_full {t}")
    tracked = sum(r["pkts"] for r in recs if r["type"] == "qp" and r.get("final"))
    if tracked + t["pkts"] != recs[-1]["roce_pkts"]:
        fail(f"a 4-endpoint table: {tracked} tracked + {t['pkts']} refused != {recs[-1]['roce_pkts']} RoCE packets")
    pcap = os.path.join(d, "stray.pcap")
    for args in (["replay", pcap, "--max-endpoints", "268435456", *EAL],
                 ["monitor", "--vdev", "net_null0", "--max-endpoints", "268435456"],
                 ["bench", "--endpoints", "16777216", "--workers", "64"]):
        p = subprocess.run([insert_dp, *args], capture_output=True, text=True, timeout=TIMEOUT)
        one_error_line(p, "available", label=" ".join(args[:3]))
        if p.stdout:
            fail(f"{' '.join(args[:3])}: wrote to stdout")
    print(f"limits: table_full {t} in the summary; oversized tables refused")


def main():
    case, insert_dp, make_pcaps = sys.argv[1:4]
    insert_trace = sys.argv[4] if len(sys.argv) > 4 else None
    with tempfile.TemporaryDirectory(prefix="insert-hardening-") as d:
        subprocess.run([make_pcaps, d], check=True)
        if case == "options":
            case_options(insert_dp, d, insert_trace)
            return
        {"input": case_input, "signals": case_signals, "eal": case_eal, "outputs": case_outputs,
         "cnp": case_cnp, "spray": case_spray, "limits": case_limits,
         "log": case_log}[case](insert_dp, d)


if __name__ == "__main__":
    main()

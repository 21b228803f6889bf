#!/usr/bin/env python3
"""Whole-system tests of `insert-dp replay` (suite 'eal').

usage: replay_test.py CASE INSERT_DP MAKE_PIPELINE_PCAPS

Every case runs the real binary with EAL on 4 KB pages (--no-huge); the tool gives each
process its own --file-prefix (with its pid) and removes its runtime directory, which
run_checked() verifies after every run. Cases: determinism, bundled, hostile, records, errors,
sources.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

EAL = ["--", "--no-huge", "-m", "256"]
ROOT = os.environ.get("INSERT_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
TIMEOUT = 300


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run_checked(cmd):
    """Runs insert-dp and checks that its own runtime directory (the prefix carries its pid)
    is gone afterwards; other processes on the machine may be running EAL too."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=TIMEOUT)
    left = glob.glob(f"/var/run/dpdk/insert-dp-replay-{proc.pid}-*")
    if left:
        fail(f"{' '.join(cmd)} left its runtime directory behind: {left}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def replay(insert_dp, pcap, *args, eal=EAL, check=True):
    cmd = [insert_dp, "replay", pcap, "--quiet", *args, *eal]
    p = run_checked(cmd)
    if check and p.returncode != 0:
        fail(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()}")
    return p


def records(insert_dp, pcap, workers, *args):
    p = replay(insert_dp, pcap, "--workers", str(workers), "--records", "-", *args)
    out = [json.loads(line) for line in p.stdout.splitlines()]
    if not out or out[-1]["type"] != "summary":
        fail(f"{pcap} --workers {workers}: no summary record last")
    return out


def comparable(recs):
    """msg records, final qp records and the summary (SPEC invariant 1), order-free."""
    msgs = sorted(json.dumps(r, sort_keys=True) for r in recs if r["type"] == "msg")
    qps = sorted(json.dumps(r, sort_keys=True) for r in recs if r["type"] == "qp" and r.get("final"))
    summary = dict(recs[-1])
    for wall_clock in ("wall_s", "mpps"):
        summary.pop(wall_clock, None)
    return msgs, qps, summary


def final_qp(recs, ip, qpn):
    found = [r for r in recs if r["type"] == "qp" and r.get("final") and r["ip"] == ip and r["qpn"] == qpn]
    if len(found) != 1:
        fail(f"expected one final qp record for {ip}/{qpn}, got {len(found)}")
    return found[0]


def case_determinism(insert_dp, d):
    for name in ("mixed.pcap", "hostile.pcap"):
        pcap = os.path.join(d, name)
        base = comparable(records(insert_dp, pcap, 1))
        if not base[0]:
            fail(f"{name}: no msg records at all")
        for workers in (2, 4):  # 4 workers: more lcores than this VM's 2 cores
            other = comparable(records(insert_dp, pcap, workers))
            for what, a, b in zip(("msg", "final qp", "summary"), base, other):
                if a != b:
                    fail(f"{name}: {what} records differ between --workers 1 and {workers}")
        # The sport shard policy must also keep the result (the workload's source ports
        # are symmetric).
        other = comparable(records(insert_dp, pcap, 2, "--shard", "ip-pair-sport"))
        if other != base:
            fail(f"{name}: --shard ip-pair-sport changes the records")
        print(f"{name}: {len(base[0])} msgs, {len(base[1])} qps identical for 1, 2, 4 workers")


def case_bundled(insert_dp, d):
    """SPEC invariant 1 on every capture shipped in pcaps/ (made by other tools)."""
    root = os.environ.get("INSERT_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "../../.."))
    pcaps = sorted(glob.glob(os.path.join(root, "pcaps", "*.pcap")) +
                   glob.glob(os.path.join(root, "pcaps", "*.pcapng")))
    if not pcaps:
        print("no bundled captures in pcaps/")
        sys.exit(77)  # meson: skipped
    for pcap in pcaps:
        base = comparable(records(insert_dp, pcap, 1))
        s = records(insert_dp, pcap, 4)[-1]
        if s["pkts"] != s["roce_pkts"] + s["non_roce_pkts"] + sum(s["malformed"].values()):
            fail(f"{pcap}: summary pkts is not roce + non_roce + malformed")
        for workers in (2, 4):
            if comparable(records(insert_dp, pcap, workers)) != base:
                fail(f"{os.path.basename(pcap)}: records differ between --workers 1 and {workers}")
        print(f"{os.path.basename(pcap)}: {len(base[0])} msgs, {len(base[1])} qps identical for 1, 2, 4 workers")


def check_victims(recs, label):
    for req, req_qpn, resp, resp_qpn in (("10.9.9.1", 0x900, "10.9.9.2", 0x901),
                                         ("fd00::91", 0x910, "fd00::92", 0x911)):
        r = final_qp(recs, resp, resp_qpn)
        expect = {"pkts": 10, "bytes": 1000, "dup_pkts": 0, "ooo_pkts": 0, "gaps": 0, "missing": 0,
                  "peer_ip": req, "peer_qpn": req_qpn}
        for k, v in expect.items():
            if r[k] != v:
                fail(f"{label}: victim {resp}/{resp_qpn} {k} = {r[k]}, expected {v}")
        if r["msgs"]["WRITE"] != 10:
            fail(f"{label}: victim {resp}/{resp_qpn} has {r['msgs']['WRITE']} WRITE msgs, expected 10")
        msgs = [m for m in recs if m["type"] == "msg" and m["dst_ip"] == resp and m["dst_qpn"] == resp_qpn]
        if len(msgs) != 10 or any(m["status"] != "ok" or m["latency_ns"] != 1000 for m in msgs):
            fail(f"{label}: victim {resp}/{resp_qpn} msgs not 10 x ok with 1000 ns latency")
        a = final_qp(recs, req, req_qpn)
        if a["pkts"] != 10 or a["bytes"] != 0:
            fail(f"{label}: victim requester {req}/{req_qpn} counters wrong: {a['pkts']} pkts")


def case_hostile(insert_dp, d):
    pcap = os.path.join(d, "hostile.pcap")
    recs = records(insert_dp, pcap, 2)
    s = recs[-1]
    if s["malformed"] != {"length_mismatch": 5, "truncated": 7, "reserved_opcode": 3}:
        fail(f"malformed counters {s['malformed']}")
    if s["non_roce_pkts"] != 7:
        fail(f"non_roce_pkts {s['non_roce_pkts']}, expected 7")
    if s["pkts"] != s["roce_pkts"] + s["non_roce_pkts"] + sum(s["malformed"].values()):
        fail("summary pkts is not roce + non_roce + malformed")
    check_victims(recs, "hostile")
    storm = final_qp(recs, "10.8.0.2", 0x800)
    if storm["pkts"] != 3000:
        fail(f"PSN storm endpoint counted {storm['pkts']} packets, expected 3000")

    # Truncated capture: the frames before the cut are analysed, a warning names the file.
    data = open(pcap, "rb").read()
    cut = os.path.join(d, "cut.pcap")
    with open(cut, "wb") as f:
        f.write(data[: len(data) - 37])
    p = replay(insert_dp, cut, "--workers", "2", "--records", "-")
    if "cut.pcap" not in p.stderr:
        fail(f"truncated capture: no warning naming the file: {p.stderr!r}")
    s2 = json.loads(p.stdout.splitlines()[-1])
    if s2["pkts"] != s["pkts"] - 1:
        fail(f"truncated capture: {s2['pkts']} frames, expected {s['pkts'] - 1}")

    # Endpoint-table overflow: a tiny table never crashes, and every frame is still counted.
    recs = records(insert_dp, pcap, 2, "--max-endpoints", "4")
    s3 = recs[-1]
    if s3["pkts"] != s["pkts"] or s3["endpoints"] > 8:
        fail(f"overflow: pkts {s3['pkts']} endpoints {s3['endpoints']}")
    # Idle eviction in capture time: results stay identical for any worker count, events
    # (the `timeout` of each message frozen by an eviction) included - also for a worker
    # whose last packet comes long before the end of the capture.
    def with_events(recs):
        events = sorted(json.dumps(r, sort_keys=True) for r in recs if r["type"] == "event")
        return comparable(recs), events

    idle = os.path.join(d, "idle.pcap")
    for capture in (pcap, idle):
        a = with_events(records(insert_dp, capture, 1, "--idle-timeout", "0.000005"))
        b = with_events(records(insert_dp, capture, 4, "--idle-timeout", "0.000005"))
        if a[0] != b[0]:
            fail(f"{capture} --idle-timeout: records differ between 1 and 4 workers")
        if a[1] != b[1]:
            only = sorted(set(a[1]) ^ set(b[1]))[:3]
            fail(f"{capture} --idle-timeout: events differ between 1 and 4 workers, e.g. {only}")
    timeouts = [e for e in map(json.loads, a[1]) if e["kind"] == "timeout"]
    if len(timeouts) != 8 or {e["qpn"] for e in timeouts} != set(range(0x800, 0x808)):
        fail(f"idle.pcap: expected a timeout event for each of the 8 quiet WRITEs, got {timeouts}")
    ud = [json.loads(q) for q in b[0][1] if json.loads(q)["qpn"] == 0x900]
    if sorted(q["pkts"] for q in ud) != [8, 8]:
        fail(f"idle.pcap: the UD QP split over 4 workers should give 2 records of 8 packets: {ud}")
    print(f"hostile: counters exact, victims intact, storm contained, truncation and overflow handled")


def case_sources(insert_dp, d):
    """docs/semantics.md "Sources": one packet from a third host changes nothing of a
    connection, with any worker count (SPEC invariants 1 and 4)."""
    stray = os.path.join(d, "stray.pcap")
    for workers in (1, 2, 4):
        recs = records(insert_dp, stray, workers)
        label = f"stray.pcap --workers {workers}"
        for req, req_qpn, resp, resp_qpn, stray_ip in (("10.0.0.1", 17, "10.0.0.2", 34, "10.0.0.9"),
                                                       ("10.0.1.1", 18, "10.0.1.2", 35, "10.0.1.9")):
            msgs = sorted((m for m in recs if m["type"] == "msg" and m["dst_ip"] == resp),
                          key=lambda m: m["psn_first"])
            victim = [m for m in msgs if m["src_ip"] == req]
            if [m["psn_first"] for m in victim] != list(range(100, 110)) or any(
                    m["status"] != "ok" or m["retx_pkts"] or m["src_qpn"] != req_qpn for m in victim):
                fail(f"{label}: {resp}/{resp_qpn} victim messages (psn, status, retx, src_qpn) " +
                     str([(m["psn_first"], m["status"], m["retx_pkts"], m["src_qpn"]) for m in victim]))
            strays = [m for m in msgs if m["src_ip"] == stray_ip]
            if len(strays) != 1 or strays[0]["psn_first"] != 5000 or strays[0]["src_qpn"] is not None:
                fail(f"{label}: the stray SEND should be one msg from {stray_ip}: {strays}")
            if len(msgs) != 11:
                fail(f"{label}: {len(msgs)} messages to {resp}/{resp_qpn}, expected 11")
            q = final_qp(recs, resp, resp_qpn)
            expect = {"pkts": 11, "dup_pkts": 0, "ooo_pkts": 0, "gaps": 0, "missing": 0,
                      "peer_ip": req, "peer_qpn": req_qpn}
            for k, v in expect.items():
                if q[k] != v:
                    fail(f"{label}: {resp}/{resp_qpn} {k} = {q[k]}, expected {v}")
            if q["msgs"]["SEND"] != 11:
                fail(f"{label}: {resp}/{resp_qpn} counts {q['msgs']['SEND']} SENDs, expected 11")
        if recs[-1]["connections"] != 2 or recs[-1]["msgs"] != 22:
            fail(f"{label}: summary {recs[-1]}")
    # Random traffic from eight hosts to a few shared QPs: identical for any worker count,
    # with and without idle eviction (whose evicted records carry their part's latencies).
    multi = os.path.join(d, "multisource.pcap")
    for extra in ([], ["--idle-timeout", "0.01"], ["--idle-timeout", "0.000005"]):
        base = comparable(records(insert_dp, multi, 1, *extra))
        if base[2]["connections"] == 0 or len(base[0]) < 1000:
            fail(f"multisource.pcap {extra}: too little happened: {base[2]}")
        for workers in (2, 4):
            other = comparable(records(insert_dp, multi, workers, *extra))
            for what, a, b in zip(("msg", "final qp", "summary"), base, other):
                if a != b:
                    fail(f"multisource.pcap {extra}: {what} records differ between --workers 1 and {workers}")
    print("sources: third-host packets leave connections intact; multisource identical for 1, 2, 4 workers")


def case_records(insert_dp, d):
    pcap = os.path.join(d, "many.pcap")
    for workers, extra in ((1, []), (2, ["--record-ring", "16"]), (4, ["--record-ring", "16", "--interval", "0.0005"])):
        recs = records(insert_dp, pcap, workers, *extra)
        s = recs[-1]
        msgs = sum(1 for r in recs if r["type"] == "msg")
        if msgs != s["msgs"] or msgs < 40000:
            fail(f"--workers {workers} {extra}: {msgs} msg records, summary says {s['msgs']}")
        finals = sum(1 for r in recs if r["type"] == "qp" and r.get("final"))
        if finals != s["endpoints"]:
            fail(f"--workers {workers}: {finals} final qp records for {s['endpoints']} endpoints")
        periodic = sum(1 for r in recs if r["type"] == "qp" and not r.get("final"))
        if "--interval" in extra and periodic == 0:
            fail("--interval produced no periodic qp records")
    # Records to a file: the summary goes to stdout, the file holds every record.
    out = os.path.join(d, "out.jsonl")
    p = run_checked([insert_dp, "replay", pcap, "--workers", "2", "--records", out, *EAL])
    lines = open(out).read().splitlines()
    if p.returncode != 0 or "Top" not in p.stdout or json.loads(lines[-1])["msgs"] != msgs:
        fail(f"--records FILE: exit {p.returncode}, summary on stdout: {'Top' in p.stdout}")
    # Standard input: `tcpdump -w - | insert-dp replay -` - the same records as the file,
    # for a pcap and a pcapng stream.
    for capture in (pcap, os.path.join(ROOT, "pcaps", "ipv6_vlan.pcapng")):
        with open(capture, "rb") as f:
            piped = subprocess.run([insert_dp, "replay", "-", "--records", "-", *EAL], stdin=f,
                                   capture_output=True, timeout=TIMEOUT)
        if piped.returncode != 0:
            fail(f"replay - < {capture}: exit {piped.returncode}: {piped.stderr.decode()}")
        from_stdin = [json.loads(line) for line in piped.stdout.decode().splitlines()]
        if comparable(from_stdin) != comparable(records(insert_dp, capture, 1)):
            fail(f"replay - < {capture}: records differ from the file's")
    print(f"records: {msgs} msgs, none lost with 16-record rings; stdin as the file")


def case_errors(insert_dp, d):
    text = os.path.join(d, "not_a_capture.txt")
    with open(text, "w") as f:
        f.write("hello, this is not a pcap\n" * 10)
    wrong_link = os.path.join(d, "linktype.pcap")
    with open(wrong_link, "wb") as f:  # nanosecond pcap header, link type 101 (raw IP)
        f.write(bytes.fromhex("4d3cb2a1020004000000000000000000ffff000065000000"))
    cases = [
        ([os.path.join(d, "missing.pcap")], "missing.pcap"),
        ([text], "not_a_capture.txt"),
        ([wrong_link], "linktype.pcap"),
        ([os.path.join(d, "mixed.pcap"), "--workers", "0"], "--workers"),
        ([os.path.join(d, "mixed.pcap"), "--shard", "5-tuple"], "--shard"),
        ([os.path.join(d, "mixed.pcap"), "--bogus"], "--bogus"),
        ([os.path.join(d, "mixed.pcap"), "--records", "/nonexistent/dir/x.jsonl"], "--records"),
        ([], "FILE"),
    ]
    for args, needle in cases:
        p = subprocess.run([insert_dp, "replay", *args], capture_output=True, text=True, timeout=TIMEOUT)
        lines = p.stderr.strip().splitlines()
        if p.returncode != 2 or p.stdout or len(lines) != 1 or needle not in lines[0]:
            fail(f"replay {args}: exit {p.returncode}, stdout {p.stdout!r}, stderr {p.stderr!r}")
    for stdin, needle in ((b"", "stdin: not a pcap or pcapng capture (too short)"),
                          (b"hello, this is not a pcap\n" * 10, "stdin: ")):
        p = subprocess.run([insert_dp, "replay", "-"], input=stdin, capture_output=True,
                           timeout=TIMEOUT)
        lines = p.stderr.decode().strip().splitlines()
        if p.returncode != 2 or p.stdout or len(lines) != 1 or needle not in lines[0]:
            fail(f"replay - <{stdin[:10]!r}>: exit {p.returncode}, stderr {p.stderr!r}")
    p = subprocess.run([insert_dp, "replay", "--help"], capture_output=True, text=True)
    if p.returncode != 0 or "Examples" not in p.stdout or "--workers" not in p.stdout:
        fail("replay --help")
    print("errors: one line naming the file/option, exit 2, nothing on stdout")


def main():
    case, insert_dp, make_pcaps = sys.argv[1:4]
    with tempfile.TemporaryDirectory(prefix="insert-pipeline-") as d:
        subprocess.run([make_pcaps, d], check=True)
        {"determinism": case_determinism, "hostile": case_hostile, "records": case_records,
         "errors": case_errors, "bundled": case_bundled, "sources": case_sources}[case](insert_dp, d)


if __name__ == "__main__":
    main()

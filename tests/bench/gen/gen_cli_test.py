#!/usr/bin/env python3
"""insert-gen command line: listing, errors (one line on stderr, exit 2) and the shape of
the truth file (SPEC 7 field names, summary arithmetic) for a JSON scenario."""
import json
import os
import subprocess
import sys
import tempfile

GEN = sys.argv[1]
EXAMPLE = sys.argv[2]
failures = []

MSG_FIELDS = ["type", "src_ip", "dst_ip", "dst_qpn", "src_qpn", "op", "imm", "inv", "psn_first",
              "psn_last", "pkts", "bytes", "va", "rkey", "dma_len", "t_first_ns", "t_last_ns",
              "t_ack_ns", "latency_ns", "retx_pkts", "naks", "rnr_naks", "status"]
QP_FIELDS = ["type", "ip", "qpn", "peer_ip", "peer_qpn", "pair_by", "transport", "pkts", "bytes",
             "msgs", "dup_pkts", "ooo_pkts", "gaps", "missing", "naks", "cnps", "ecn_ce",
             "t_first_ns", "t_last_ns", "lat_p50_ns", "lat_p99_ns", "lat_max_ns", "final"]


def check(cond, what):
    if not cond:
        failures.append(what)


def run(*args):
    return subprocess.run([GEN, *args], capture_output=True, text=True, timeout=120)


def expect_usage_error(args, needle):
    r = run(*args)
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 2, f"{args}: exit {r.returncode}, want 2")
    check(len(lines) == 1, f"{args}: {len(lines)} stderr lines, want 1: {r.stderr!r}")
    check(needle in r.stderr, f"{args}: stderr does not name {needle!r}: {r.stderr!r}")
    check(r.stdout == "", f"{args}: wrote to stdout")


with tempfile.TemporaryDirectory() as tmp:
    r = run("--list-scenarios")
    names = r.stdout.split()
    check(r.returncode == 0, "--list-scenarios failed")
    for want in ["clean_write", "mixed_ops", "cm_pairing", "losses", "reordering", "congestion",
                 "ipv6_vlan_wrap", "malformed_background", "large"]:
        check(want in names, f"--list-scenarios lacks {want}")

    out = os.path.join(tmp, "x.pcap")
    truth = os.path.join(tmp, "x.json")
    expect_usage_error(["--scenario", "no_such_thing", "--out", out, "--truth", truth], "--scenario")
    expect_usage_error(["--scenario", os.path.join(tmp, "missing.json"), "--out", out, "--truth", truth],
                       "missing.json")
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        f.write('{"hosts": [{"ip": "10.0.0.1"}], "wat": 1}')
    expect_usage_error(["--scenario", bad, "--out", out, "--truth", truth], "wat")
    with open(bad, "w") as f:
        f.write('{"hosts": [')
    expect_usage_error(["--scenario", bad, "--out", out, "--truth", truth], "bad.json")
    with open(bad, "w") as f:
        f.write('{"hosts": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}], "connections": [{"a": 0, "b": 1, "mtu": 1000}]}')
    expect_usage_error(["--scenario", bad, "--out", out, "--truth", truth], "mtu")
    expect_usage_error(["--scenario", "clean_write", "--seed", "abc", "--out", out, "--truth", truth], "--seed")
    expect_usage_error(["--scenario", "clean_write", "--truth", truth], "--out")
    expect_usage_error(["--scenario", "clean_write", "--out", out], "--truth")
    expect_usage_error(["--scenario", "clean_write", "--out", "/nonexistent/dir/x.pcap", "--truth", truth],
                       "/nonexistent/dir/x.pcap")
    expect_usage_error(["--bogus"], "--bogus")
    check(not os.path.exists(out), "a failed run left a pcap behind")

    r = run("--scenario", EXAMPLE, "--seed", "5", "--out", out, "--truth", truth, "--quiet")
    check(r.returncode == 0, f"example scenario failed: {r.stderr}")
    with open(truth) as f:
        t = json.load(f)
    check(t["scenario"] == "two_hosts_example" and t["seed"] == 5, "truth header")
    for m in t["msgs"]:
        check(list(m)[:len(MSG_FIELDS)] == MSG_FIELDS, f"msg fields {list(m)}")
        check(m["latency_ns"] is None or m["latency_ns"] == m["t_ack_ns"] - m["t_first_ns"], "latency")
    for q in t["qps"]:
        check(list(q) == QP_FIELDS, f"qp fields {list(q)}")
        check(list(q["naks"]) == ["seq", "rnr", "inv", "access", "op"], "naks keys")
        check(list(q["msgs"]) == ["SEND", "WRITE", "READ", "CMP_SWAP", "FETCH_ADD"], "msgs keys")
    s = t["summary"]
    check(s["pkts"] == s["roce_pkts"] + s["non_roce_pkts"] + sum(s["malformed"].values()), "summary pkts")
    check(s["malformed"] == {"length_mismatch": 1, "truncated": 2, "reserved_opcode": 1}, f"malformed {s['malformed']}")
    check(s["non_roce_pkts"] == 10, "non_roce_pkts")
    check(s["msgs"] == len(t["msgs"]), "summary msgs")
    check(s["endpoints"] == len(t["qps"]), "summary endpoints")
    check(s["connections"] * 2 == sum(1 for q in t["qps"] if q["pair_by"]), "summary connections")
    check(sum(q["pkts"] for q in t["qps"]) == s["roce_pkts"], "endpoint pkts add up to roce_pkts")
    check(sum(sum(q["msgs"].values()) for q in t["qps"]) == s["msgs"], "endpoint msgs add up")
    pairs = {q["pair_by"] for q in t["qps"] if q["transport"] == "RC"}
    check("cm" in pairs, f"the CM-paired connection is not paired by cm: {pairs}")
    ops = {m["op"] for m in t["msgs"]}
    check(ops >= {"SEND", "WRITE", "READ", "CMP_SWAP", "FETCH_ADD"}, f"ops {ops}")
    with open(out, "rb") as f:
        magic = f.read(4)
    check(magic == bytes.fromhex("4d3cb2a1"), "pcap is not nanosecond pcap")

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)

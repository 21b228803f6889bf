#!/usr/bin/env python3
"""insert-gen --host-traces / --e2e-truth on the command line: one-line exit-2 errors that
name the option, the records' shape (insert-trace's and docs/correlation.md's field names
and order), the same bytes with --threads 1 and 3, and tests/integration/compare_e2e.py
telling a matching output from a wrong one.

  gen_host_cli_test.py INSERT_GEN HOST_TRACES_JSON COMPARE_E2E_PY
"""
import json
import os
import subprocess
import sys
import tempfile

GEN, SCENARIO, COMPARE = sys.argv[1:4]
failures = []

E2E_FIELDS = ["type", "src_ip", "src_qpn", "dst_ip", "dst_qpn", "op", "bytes", "psn_first", "wr_id",
              "pid", "comm", "cgroup", "peer_pid", "peer_comm", "t_post_ns", "t_first_ns", "t_ack_ns",
              "t_poll_ns", "host_ns", "net_ns", "completion_ns", "total_ns", "retx_pkts", "naks",
              "status", "match", "host", "peer_host", "peer_cgroup", "signaled", "wc_status",
              "t_recv_poll_ns", "t_covered_ns", "gen_msg"]
APP_FIELDS = ["type", "host", "ip", "pid", "comm", "cgroup", "cgroup_path", "qps", "msgs", "bytes", "host_ns",
              "net_ns", "completion_ns", "total_ns", "signaled_wrs", "retx_pkts", "naks", "cnps",
              "ecn_ce", "ecn_ce_caused", "unmatched_wr", "final"]
CLOCK_FIELDS = ["type", "host", "lo_ns", "hi_ns", "offset_ns", "source", "consistent", "matches",
                "gen_offset_ns"]
PAIR_FIELDS = ["type", "ip", "qpn", "peer_ip", "peer_qpn", "pair_by", "dp_pair_by", "dp_peer_ip",
               "dp_peer_qpn", "pid", "comm"]
VERB_COMMON = ["type", "verb", "t_ns", "wall_ns", "pid", "tid", "comm", "cgroup", "ip", "ctx"]
VERB_FIELDS = {
    "create_qp": ["qp", "qpn", "qp_type", "pd", "send_cq", "recv_cq", "ret"],
    "post_send": ["qp", "qpn", "wr_id", "opcode", "send_flags", "signaled", "num_sge", "len",
                  "remote_addr", "rkey", "imm", "chain_index", "truncated"],
    "post_recv": ["qp", "qpn", "wr_id", "num_sge", "len", "chain_index", "truncated"],
    "poll_cq": ["cq", "qpn", "wr_id", "status", "status_code", "opcode", "byte_len", "imm",
                "src_qp", "wc_flags", "index", "polled"],
    "destroy_qp": ["qp", "qpn"],
    "reg_mr": ["mr", "addr", "length", "lkey", "rkey", "pd", "iova", "access", "access_flags",
               "ret"],
}


def check(cond, what):
    if not cond:
        failures.append(what)


def run(*args):
    return subprocess.run([GEN, *args], capture_output=True, text=True, timeout=120)


def lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def read(path):
    with open(path, "rb") as f:
        return f.read()


with tempfile.TemporaryDirectory() as tmp:
    pcap, truth = os.path.join(tmp, "x.pcap"), os.path.join(tmp, "x.json")
    hosts, e2e = os.path.join(tmp, "x.hosts.jsonl"), os.path.join(tmp, "x.e2e.jsonl")
    base = ["--scenario", SCENARIO, "--seed", "3", "--out", pcap, "--truth", truth]

    # Errors: one line naming the option, exit 2, nothing left behind.
    for option in ("--host-traces", "--e2e-truth"):
        r = run(*base, option, "/nonexistent/dir/f.jsonl")
        check(r.returncode == 2, f"{option} unwritable: exit {r.returncode}")
        check(len(r.stderr.strip().splitlines()) == 1 and option in r.stderr,
              f"{option} unwritable: stderr {r.stderr!r}")
        check(not os.path.exists(pcap) and not os.path.exists(truth),
              f"{option} unwritable: pcap or truth left behind")
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        json.dump({"hosts": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}],
                   "host_trace": {"untraced_hosts": [2]}}, f)
    r = run("--scenario", bad, "--out", pcap, "--truth", truth)
    check(r.returncode == 2 and "host_trace.untraced_hosts" in r.stderr, f"bad host index: {r.stderr!r}")
    with open(bad, "w") as f:
        json.dump({"hosts": [{"ip": "10.0.0.1"}], "host_trace": {"clock_skew": 1}}, f)
    r = run("--scenario", bad, "--out", pcap, "--truth", truth)
    check(r.returncode == 2 and "clock_skew" in r.stderr, f"unknown host_trace key: {r.stderr!r}")

    # A run with both outputs.
    r = run(*base, "--host-traces", hosts, "--e2e-truth", e2e, "--threads", "3")
    check(r.returncode == 0, f"run failed: {r.stderr}")
    check("host traces:" in r.stderr and "0 mispaired" in r.stderr, f"summary line: {r.stderr!r}")
    verbs = lines(hosts)
    kinds = {v.get("verb", v["type"]) for v in verbs}
    for want in ("trace_start", "create_qp", "modify_qp", "reg_mr", "post_send", "post_recv",
                 "poll_cq", "destroy_qp", "dereg_mr", "process_exit", "lost"):
        check(want in kinds, f"no {want} record")
    for v in verbs:
        check(v["host"] in {f"h{i}" for i in range(5)}, f"host {v['host']}")
        check(list(v)[-1] == "host", "host is not the last field")
        if v["type"] != "verb":
            continue
        check(list(v)[:len(VERB_COMMON)] == VERB_COMMON, f"verb fields {list(v)}")
        want = VERB_FIELDS.get(v["verb"])
        if want:
            check(list(v)[len(VERB_COMMON):-1] == want, f"{v['verb']} fields {list(v)}")
    starts = {v["host"]: v["wall_offset_ns"] for v in verbs if v["type"] == "trace_start"}
    for v in verbs:
        if "wall_ns" in v and "t_ns" in v:
            check(v["wall_ns"] - v["t_ns"] == starts[v["host"]], "wall_ns != t_ns + wall_offset_ns")
    modify = [v for v in verbs if v.get("verb") == "modify_qp" and v["state"] == "RTR"]
    check(all("dest_qpn" in v and "peer_ip" in v and "rq_psn" in v for v in modify), "RTR fields")

    out = lines(e2e)
    by_type = {}
    for rec in out:
        by_type.setdefault(rec["type"], []).append(rec)
    check(len(by_type.get("e2e", [])) > 100, "few e2e records")
    for rec in by_type.get("e2e", []):
        check(list(rec) == E2E_FIELDS, f"e2e fields {list(rec)}")
    for rec in by_type.get("app", []):
        check(list(rec) == APP_FIELDS, f"app fields {list(rec)}")
        check(list(rec["host_ns"]) == ["p50", "p99", "max"], "percentile keys")
    for rec in by_type.get("clock", []):
        check(list(rec) == CLOCK_FIELDS, f"clock fields {list(rec)}")
    for rec in by_type.get("pair", []):
        check(list(rec) == PAIR_FIELDS, f"pair fields {list(rec)}")
    summary = by_type["e2e_summary"][0]
    check(summary["e2e"] == len(by_type["e2e"]), "summary e2e")
    check(summary["apps"] == len(by_type.get("app", [])), "summary apps")
    check(summary["pairs"] == len(by_type.get("pair", [])), "summary pairs")
    check(summary["trace_drops"] == sum(v["ringbuf_drops"] for v in verbs if v["type"] == "lost"),
          "summary trace_drops")
    check(summary["hosts"] == len(by_type.get("clock", [])), "summary hosts")
    kinds = [r["kind"] for r in by_type.get("alert", [])]
    check(summary["alerts"] == {k: kinds.count(k) for k in summary["alerts"]} and
          sum(summary["alerts"].values()) == len(kinds), "summary alerts by kind")
    check(summary["congestion"] == len(by_type.get("congestion", [])), "summary congestion")
    # Section 6's record order: e2e, alert, congestion (sections 8, 9), pair, app, clock,
    # summary; e2e by (t_first_ns, ...).
    rank = {"e2e": 0, "alert": 1, "congestion": 2, "pair": 3, "app": 4, "clock": 5,
            "e2e_summary": 6}
    check([rank[r["type"]] for r in out] == sorted(rank[r["type"]] for r in out), "record order")
    firsts = [r["t_first_ns"] for r in by_type["e2e"]]
    check(firsts == sorted(firsts), "e2e records not by t_first_ns")
    names = [r["host"] for r in by_type.get("clock", [])]
    check(names == sorted(names), "clock records not by host name")

    # The same bytes on one thread.
    hosts1, e2e1 = os.path.join(tmp, "y.hosts.jsonl"), os.path.join(tmp, "y.e2e.jsonl")
    r = run(*base, "--host-traces", hosts1, "--e2e-truth", e2e1, "--threads", "1", "--quiet")
    check(r.returncode == 0 and r.stderr == "", f"--threads 1 run: {r.stderr!r}")
    check(read(hosts) == read(hosts1), "host traces differ between --threads 3 and 1")
    check(read(e2e) == read(e2e1), "e2e truth differs between --threads 3 and 1")

    # compare_e2e.py: the truth equals itself; a changed field, a percentile beyond 1% and a
    # missing record are differences; a percentile within 1% and extra fields are not.
    def compare(records):
        path = os.path.join(tmp, "actual.jsonl")
        with open(path, "w") as f:
            for rec in records:
                f.write(json.dumps(rec) + "\n")
        return subprocess.run([sys.executable, COMPARE, e2e, path], capture_output=True,
                              text=True, timeout=60)

    def variant(change):
        recs = [json.loads(json.dumps(rec)) for rec in out]
        change(recs)
        return recs

    def set_first(kind, fn):
        def change(recs):
            rec = next(x for x in recs if x["type"] == kind)
            fn(rec)
        return change

    app_p50 = next(x for x in out if x["type"] == "app" and x["total_ns"]["p50"])["total_ns"]["p50"]
    cases = [
        ("itself", lambda recs: None, 0),
        ("extra field", set_first("e2e", lambda x: x.update(extra=1)), 0),
        ("summary as `summary`", set_first("e2e_summary", lambda x: x.update(type="summary")), 0),
        ("p50 within 1%", set_first("app", lambda x: x["total_ns"].update(p50=x["total_ns"]["p50"] + app_p50 // 200)), 0),
        ("p50 beyond 1%", set_first("app", lambda x: x["total_ns"].update(p50=x["total_ns"]["p50"] * 2 + 5)), 1),
        ("max off by 1", set_first("app", lambda x: x["total_ns"].update(max=x["total_ns"]["max"] + 1)), 1),
        ("t_poll_ns", set_first("e2e", lambda x: x.update(t_poll_ns=(x["t_poll_ns"] or 0) + 1)), 1),
        ("match", set_first("e2e", lambda x: x.update(match="resync" if x["match"] == "exact" else "exact")), 1),
        ("clock offset", set_first("clock", lambda x: x.update(offset_ns=x["offset_ns"] - 1)), 1),
        ("summary count", set_first("e2e_summary", lambda x: x.update(wire_only=x["wire_only"] + 1)), 1),
        ("missing e2e", lambda recs: recs.remove(next(x for x in recs if x["type"] == "e2e")), 1),
    ]
    for name, change, want in cases:
        r = compare(variant(change))
        check(r.returncode == want, f"compare_e2e {name}: exit {r.returncode}, want {want}: {r.stdout}")
        if want:
            check("expected" in r.stdout or "only in" in r.stdout, f"compare_e2e {name}: {r.stdout!r}")

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)

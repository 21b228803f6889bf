#!/usr/bin/env python3
"""Writes workload.json, the ground truth of a cluster demo run (scripts/demo.sh): which pid
ran which tool in which role on which host and address, what perftest printed about its QP
(QPN, PSN, rkey, VA, as exchanged with its peer), which processes formed the traffic pairs,
the incast and the attacks, and what each attack should raise (SPEC.md section 10).

usage: demo-workload.py OUT_DIR    (reads OUT_DIR/logs/procs.tsv, phases.tsv, meta.tsv, the
                                    processes' logs and OUT_DIR/attacks.jsonl)
"""
import json
import os
import re
import sys

# perftest's description of a QP: "local address: LID 0000 QPN 0x290100 PSN 0x6d28e6
# RKey 0x0001b7 VAddr 0x005559bcd36000" (RKey/VAddr for RDMA tests only), and the next
# line's "GID: ...:255:255:10:88:00:02" for its address.
ADDR_RE = re.compile(r"(local|remote) address: LID \S+ QPN (0x[0-9a-f]+) PSN (0x[0-9a-f]+)"
                     r"(?:.*?RKey (0x[0-9a-f]+))?(?:.*?VAddr (0x[0-9a-f]+))?")
GID_RE = re.compile(r"GID: ((?:\d+:){15}\d+)")


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


def main():
    out_dir = sys.argv[1]
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
              "ib_write_lat": "WRITE"}.get(client["tool"])
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
            "server_ip": latency["responder_ip"], "tool": latency["tool"]},
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
        "processes": processes,
        "pairs": pairs,
        "incast": incast,
        "attacks": attack_truth,
    }
    with open(os.path.join(out_dir, "workload.json"), "w") as f:
        json.dump(workload, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()

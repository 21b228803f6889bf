#!/usr/bin/env python3
"""The cluster demo (issue 21, docs/demo.md): runs `scripts/demo.sh --no-correlate` - five
host namespaces, insert-dp inline between them, insert-trace, unmodified perftest over
softverbs, an incast through tbf, two attackers - and checks what it collected against the
ground truth it wrote (workload.json) and the attackers' own reports (attacks.jsonl):

- teardown: no namespace, DPDK runtime directory or process of the run is left;
- every process exited 0; every perftest process's QP is in trace.jsonl under its pid, with
  the QPN perftest printed, and its RTR transition names the address and QPN of the peer
  perftest printed; work requests traced = iterations; the injector made no verbs call;
- the write, read and send pairs: exactly `-n` messages of their op from the requester's
  address to the responder's QP, all bytes, the responder's rkey, paired with the
  requester's QPN, none failed;
- the rkey guesses: one WRITE message per guess from the attacker to the victim QP, each
  with the rkey and PSN the attacker reports, status nak_access; the victim's QP counts the
  legitimate WRITEs that reused those PSNs as duplicates, the attacker's the NAKs;
- the injections: one WRITE from the attacker's own address to the victim QP at the PSN
  it reports, never answered (status incomplete: softverbs drops requests from an address
  other than the QP's peer), and one with the peer's address, accepted (status ok);
- the incast: each receiver on h4 got 1-15% of its packets ECN-CE (5% marked), each
  sender CNPs, tbf throttled; no other endpoint saw CE marks or CNPs.
Needs root (exit 77 otherwise)."""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

SRC = os.environ.get("INSERT_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("INSERT_BUILD_ROOT", os.path.join(SRC, "build"))
DEMO = os.path.join(SRC, "scripts", "demo.sh")
DEADLINE_S = 300


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def run_demo(out):
    env = dict(os.environ, INSERT_BUILD_ROOT=BUILD)
    t0 = time.monotonic()
    r = subprocess.run([DEMO, "--out", out, "--no-correlate"], cwd=SRC, env=env,
                       capture_output=True, text=True, timeout=DEADLINE_S)
    took = time.monotonic() - t0
    sys.stdout.write(r.stdout)
    check(r.returncode == 0, f"scripts/demo.sh exited {r.returncode}: {r.stderr[-2000:]}")
    name = re.search(r"cluster (dm\d+):", r.stdout)
    check(name, "scripts/demo.sh did not name its cluster")
    return name.group(1), took


def check_teardown(name, workload):
    nss = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    left = [l.split()[0] for l in nss.splitlines() if l.startswith(name + "-")]
    check(not left, f"namespaces left behind: {left}")
    check(not os.path.exists(f"/var/run/dpdk/insert-cluster-{name}"), "DPDK runtime directory left")
    for p in workload["processes"]:
        alive = os.path.exists(f"/proc/{p['pid']}")
        if alive:  # the pid may have been reused: only ours, in our namespaces, count
            try:
                cmd = open(f"/proc/{p['pid']}/cmdline").read()
            except OSError:
                cmd = ""
            check(p["tool"] not in cmd, f"{p['key']} (pid {p['pid']}) still runs")


def check_processes(workload):
    procs = workload["processes"]
    check(len(procs) == 18, f"{len(procs)} processes in workload.json, expected 18")
    for p in procs:
        check(p["exit_status"] == 0, f"{p['key']} exited {p['exit_status']} ({p['log']})")
        if p["tool"].startswith("ib_"):
            pt = p.get("perftest") or {}
            check("local" in pt and "remote" in pt, f"{p['key']}: perftest printed no QP")


def check_trace(workload, trace, attacks):
    verbs = [r for r in trace if r.get("type") == "verb"]
    by_pid = {}
    for r in verbs:
        by_pid.setdefault(r["pid"], []).append(r)
    exits = {r["pid"] for r in trace if r.get("type") == "process_exit"}
    for p in workload["processes"]:
        mine = by_pid.get(p["pid"], [])
        if p["tool"] == "insert-attack" and p["role"] == "attacker" and "inject" in p["args"]:
            check(not mine, f"{p['key']}: the injector made verbs calls")
            continue
        qps = {r["qpn"] for r in mine if r["verb"] == "create_qp" and r["ret"] == 0}
        check(qps, f"{p['key']} (pid {p['pid']}): no create_qp in trace.jsonl")
        check(all(r["comm"] == p["comm"] for r in mine), f"{p['key']}: comm differs")
        check(p["pid"] in exits, f"{p['key']}: no process_exit record")
        rtr = [r for r in mine if r["verb"] == "modify_qp" and r.get("state") == "RTR" and r["ret"] == 0]
        check(rtr, f"{p['key']}: no RTR transition traced")
        if p["tool"].startswith("ib_"):
            local, remote = p["perftest"]["local"], p["perftest"]["remote"]
            check(local["qpn"] in qps, f"{p['key']}: perftest's QPN {local['qpn']:#x} not traced ({qps})")
            r = next(x for x in rtr if x["qpn"] == local["qpn"])
            check(r["ip"] == p["ip"], f"{p['key']}: RTR ip {r['ip']} != {p['ip']}")
            check(r["peer_ip"] == remote["ip"] and r["dest_qpn"] == remote["qpn"],
                  f"{p['key']}: RTR peer {r['peer_ip']}/{r['dest_qpn']} != perftest's "
                  f"{remote['ip']}/{remote['qpn']}")
    for pair in workload["pairs"]:
        req = pair["requester_pid"]
        opcode = {"WRITE": "RDMA_WRITE", "READ": "RDMA_READ", "SEND": "SEND"}[pair["op"]]
        posts = [r for r in by_pid.get(req, []) if r["verb"] == "post_send" and r["opcode"] == opcode]
        check(len(posts) == pair["iterations"],
              f"{pair['group']}: {len(posts)} {opcode} work requests traced, -n {pair['iterations']}")
    guess = next(a for a in attacks if a["attack"] == "rkey_guess")
    qps = {r["qpn"] for r in by_pid.get(guess["pid"], []) if r["verb"] == "create_qp"}
    check(qps == {guess["src_qpn"]}, f"rkey-guess QP {guess['src_qpn']} not traced ({qps})")
    posts = [r for r in by_pid[guess["pid"]] if r["verb"] == "post_send"]
    check(len(posts) == guess["packets_sent"],
          f"rkey-guess: {len(posts)} posts traced, it reports {guess['packets_sent']}")
    print(f"trace: {len(verbs)} verb records; every perftest QP and its peer as perftest printed it")


def final_qps(dp):
    return {(r["ip"], r["qpn"]): r for r in dp if r["type"] == "qp" and r["final"]}


def check_pairs(workload, msgs, finals):
    for pair in workload["pairs"]:
        if pair["phase"] != "pairs":
            continue
        mine = [m for m in msgs if m["src_ip"] == pair["requester_ip"] and
                m["dst_ip"] == pair["responder_ip"] and m["dst_qpn"] == pair["responder_qpn"]]
        n, size = pair["iterations"], pair["size"]
        check(len(mine) == n, f"{pair['group']}: {len(mine)} msg records, perftest -n {n}")
        check(all(m["op"] == pair["op"] for m in mine), f"{pair['group']}: not all {pair['op']}")
        check(sum(m["bytes"] for m in mine) == n * size, f"{pair['group']}: bytes differ from {n} x {size}")
        check(all(m["src_qpn"] == pair["requester_qpn"] for m in mine),
              f"{pair['group']}: not paired with the requester's QPN {pair['requester_qpn']}")
        bad = [m["status"] for m in mine if m["status"] not in ("ok", "incomplete")]
        check(not bad, f"{pair['group']}: failed messages {bad[:5]}")
        ok = sum(m["status"] == "ok" for m in mine)
        check(ok >= 0.95 * n, f"{pair['group']}: only {ok} of {n} completed")
        if pair["op"] in ("WRITE", "READ"):
            responder = next(p for p in workload["processes"] if p["pid"] == pair["responder_pid"])
            rkey = responder["perftest"]["local"]["rkey"]
            check(all(m["rkey"] == rkey for m in mine), f"{pair['group']}: rkey is not the responder's {rkey:#x}")
        print(f"{pair['group']}: {n} {pair['op']} {pair['requester_ip']} -> "
              f"{pair['responder_ip']}/{pair['responder_qpn']:#x}, {ok} ok")


def check_rkey_guess(workload, msgs, finals, attack):
    truth = next(a for a in workload["attacks"] if a["kind"] == "rkey_guess")
    v = truth["victim"]
    check(attack["dst_qpn"] == v["qpn"] and attack["dst_ip"] == v["ip"],
          "rkey-guess did not target the victim perftest's QP")
    check(attack["rejected"] == len(attack["rkeys_tried"]) and attack["accepted"] == 0,
          f"rkey-guess: {attack['rejected']} rejected, {attack['accepted']} accepted")
    mine = [m for m in msgs if m["dst_ip"] == v["ip"] and m["dst_qpn"] == v["qpn"]]
    check(len(mine) == len(attack["rkeys_tried"]),
          f"rkey-guess: {len(mine)} msg records at the victim, {len(attack['rkeys_tried'])} guesses")
    by_psn = {m["psn_first"]: m for m in mine}
    for g in attack["guesses"]:
        m = by_psn.get(g["psn"])
        check(m is not None, f"rkey-guess: no message at PSN {g['psn']}")
        check(m["src_ip"] == attack["src_ip"] and m["src_qpn"] == attack["src_qpn"],
              f"rkey-guess PSN {g['psn']}: from {m['src_ip']}/{m['src_qpn']}")
        check(m["op"] == "WRITE" and m["rkey"] == g["rkey"] and m["va"] == attack["va"] and
              m["dma_len"] == attack["len"], f"rkey-guess PSN {g['psn']}: {m}")
        check(m["status"] == "nak_access", f"rkey-guess PSN {g['psn']}: status {m['status']}")
    victim_ep = finals[(v["ip"], v["qpn"])]
    check(victim_ep["dup_pkts"] == attack["resync_writes"],
          f"victim QP: {victim_ep['dup_pkts']} duplicates, the attacker re-sent {attack['resync_writes']} PSNs")
    attacker_ep = finals[(attack["src_ip"], attack["src_qpn"])]
    check(attacker_ep["naks"]["access"] == len(attack["rkeys_tried"]),
          f"attacker QP: {attacker_ep['naks']['access']} remote access NAKs")
    print(f"rkey-guess: {len(mine)} WRITEs {attack['src_ip']} -> {v['ip']}/{v['qpn']:#x} "
          f"(pid {v['pid']}), rkeys {attack['rkeys_tried'][0]:#x}.., all nak_access")


def check_injections(workload, msgs, attacks):
    for truth in (a for a in workload["attacks"] if a["kind"] == "inject"):
        a = truth["record"]
        v = truth["victim"]
        check(a["dst_ip"] == v["ip"] and a["dst_qpn"] == v["qpn"], "inject did not target the victim QP")
        mine = [m for m in msgs if m["dst_ip"] == v["ip"] and m["dst_qpn"] == v["qpn"] and
                m["src_ip"] == a["src_ip"]]
        if a["spoofed"]:
            check(a["src_ip"] == v["peer_ip"], f"spoofed as {a['src_ip']}, the victim's peer is {v['peer_ip']}")
            # The peer never sends requests to the victim (it only receives its writes):
            # the one request message from its address is the injected one.
            expected_status = "ok"
        else:
            check(a["src_ip"] == truth["attacker_ip"] and a["src_ip"] != v["peer_ip"],
                  f"unspoofed injection from {a['src_ip']}")
            expected_status = "incomplete"
        check(len(mine) == a["packets_sent"] == 1,
              f"inject ({'spoofed' if a['spoofed'] else 'own address'}): {len(mine)} msg records")
        m = mine[0]
        check(m["psn_first"] == a["psn_first"] and m["op"] == "WRITE" and m["rkey"] == a["rkey"] and
              m["va"] == a["va"] and m["bytes"] == a["len"], f"injected message differs: {m}")
        check(m["status"] == expected_status, f"injected message from {a['src_ip']}: status {m['status']}")
        print(f"inject from {a['src_ip']}{' (spoofed)' if a['spoofed'] else ''}: WRITE -> "
              f"{v['ip']}/{v['qpn']:#x} (pid {v['pid']}) PSN {a['psn_first']:#x}, {m['status']}")


def check_incast(workload, msgs, finals, out):
    pairs = [p for p in workload["pairs"] if p["phase"] == "incast"]
    check(len(pairs) == 3, f"{len(pairs)} incast pairs")
    ecn = workload["incast"]["ecn_fraction"]
    incast_eps = set()
    for p in pairs:
        recv = finals[(p["responder_ip"], p["responder_qpn"])]
        send = finals[(p["requester_ip"], p["requester_qpn"])]
        incast_eps |= {(p["responder_ip"], p["responder_qpn"]), (p["requester_ip"], p["requester_qpn"])}
        n = len([m for m in msgs if m["src_ip"] == p["requester_ip"] and m["dst_ip"] == p["responder_ip"]
                 and m["dst_qpn"] == p["responder_qpn"] and m["op"] == "WRITE"])
        check(n == p["iterations"], f"{p['group']}: {n} WRITE messages, -n {p['iterations']}")
        check(0.2 * ecn * recv["pkts"] <= recv["ecn_ce"] <= 3 * ecn * recv["pkts"],
              f"{p['group']}: {recv['ecn_ce']} CE of {recv['pkts']} packets at the receiver ({ecn:.0%} marked)")
        check(0 < send["cnps"] <= recv["ecn_ce"],
              f"{p['group']}: {send['cnps']} CNPs at the sender for {recv['ecn_ce']} CE")
        print(f"{p['group']}: {p['requester_ip']} -> {p['responder_ip']}: {recv['ecn_ce']} CE of "
              f"{recv['pkts']} packets, {send['cnps']} CNPs back")
    for key, q in finals.items():
        if key not in incast_eps:
            check(q["ecn_ce"] == 0 and q["cnps"] == 0,
                  f"{key}: CE {q['ecn_ce']} CNPs {q['cnps']} outside the incast")
    tbf = open(os.path.join(out, "logs", "tbf.txt")).read()
    over = re.search(r"overlimits (\d+)", tbf)
    check(over and int(over.group(1)) > 0, f"tbf never throttled: {tbf.strip()}")
    print(f"tbf toward {workload['incast']['victim_host']}: overlimits {over.group(1)}")


def main():
    if os.geteuid() != 0:
        print("skipped: needs root (network namespaces, eBPF)")
        return 77
    with tempfile.TemporaryDirectory(prefix="insert-demo-") as out:
        try:
            name, took = run_demo(out)
            workload = json.load(open(os.path.join(out, "workload.json")))
            check_teardown(name, workload)
            check_processes(workload)
            attacks = read_jsonl(os.path.join(out, "attacks.jsonl"))
            check(len(attacks) == 3 and not any("error" in a for a in attacks),
                  f"attacks.jsonl: {attacks}")
            dp = read_jsonl(os.path.join(out, "dp.jsonl"))
            msgs = [r for r in dp if r["type"] == "msg"]
            finals = final_qps(dp)
            check_trace(workload, read_jsonl(os.path.join(out, "trace.jsonl")), attacks)
            check_pairs(workload, msgs, finals)
            check_rkey_guess(workload, msgs, finals, next(a for a in attacks if a["attack"] == "rkey_guess"))
            check_injections(workload, msgs, attacks)
            check_incast(workload, msgs, finals, out)
        except Failure as e:
            print(f"FAIL: {e}")
            keep = os.environ.get("DEMO_KEEP")
            if keep:
                subprocess.run(["cp", "-r", out, keep])
                print(f"kept in {keep}")
            return 1
    print(f"PASS demo ({took:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

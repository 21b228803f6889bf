#!/usr/bin/env python3
"""evidence.origin on insert-gen's `attacks` scenario (docs/correlation.md 8,
docs/insert-gen.md "Attacks"): insert-gen -> insert-dp replay -> insert-correlate, batch and
live (through a pipe).

Host hN's NIC sends with MAC 02:1e:47:00:00:0N and TTL 64; the attacker is h4. Its three
forgeries spoofed from the victim QPs' peers (spoofed_injection, spoofed_first,
spoofed_unacked) each raise an injected_message whose origin is h4's MAC where the claimed
peer's packets had its own: differs exactly ["src_mac"], the TTLs equal, the ports null (a
replay). Its WRITE from its own address (peer_mismatch) arrives before any other message
of that address: usual null, nothing differs. No other alert kind has an origin.

usage: attack_origin_test.py BUILD_ROOT [SEED...]
"""
import json
import os
import subprocess
import sys
import tempfile

BUILD = sys.argv[1]
SEEDS = sys.argv[2:] or ["41"]
GEN = os.path.join(BUILD, "bench", "gen", "insert-gen")
DP = os.path.join(BUILD, "dataplane", "tools", "insert-dp")
CORRELATE = os.path.join(BUILD, "correlator", "insert-correlate")
ATTACKER_MAC = "02:1e:47:00:00:04"


def host_mac(ip):
    """insert-gen's ipv4 hosts: 10.0.0.(N+1) is hN."""
    n = int(ip.rsplit(".", 1)[1]) - 1
    return f"02:1e:47:00:00:{n:02x}"


def run(*args, **kw):
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=300, **kw)
    if p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
    return p


def alerts(path):
    with open(path) as f:
        return [r for r in map(json.loads, f) if r["type"] == "alert"]


def check(found, where):
    problems = []
    injected = [a for a in found if a["kind"] == "injected_message"]
    mismatch = [a for a in found if a["kind"] == "peer_mismatch"]
    if len(injected) != 3 or len(mismatch) != 1:
        problems.append(f"{len(injected)} injected_message, {len(mismatch)} peer_mismatch alerts "
                        "(want 3 and 1)")
    for a in injected:
        claimed = a["source"]["ip"]
        want = {"src_mac": ATTACKER_MAC, "ttl": 64, "port": None,
                "usual": {"src_mac": host_mac(claimed), "ttl": 64, "port": None},
                "differs": ["src_mac"]}
        if a["evidence"].get("origin") != want:
            problems.append(f"injected_message claiming {claimed}: origin "
                            f"{a['evidence'].get('origin')}, want {want}")
    for a in mismatch:
        want = {"src_mac": ATTACKER_MAC, "ttl": 64, "port": None, "usual": None, "differs": []}
        if a["evidence"].get("origin") != want:
            problems.append(f"peer_mismatch: origin {a['evidence'].get('origin')}, want {want}")
    for a in found:
        if a["kind"] not in ("injected_message", "peer_mismatch") and "origin" in a["evidence"]:
            problems.append(f"{a['kind']} has an origin")
    return [f"{where}: {p}" for p in problems]


def main():
    problems = []
    with tempfile.TemporaryDirectory(prefix="insert-origin-") as tmp:
        for seed in SEEDS:
            base = os.path.join(tmp, f"attacks{seed}")
            run(GEN, "--scenario", "attacks", "--seed", seed, "--out", base + ".pcap",
                "--truth", base + ".truth.json", "--host-traces", base + ".hosts.jsonl",
                "--quiet")
            run(DP, "replay", base + ".pcap", "--quiet", "--records", base + ".dp.jsonl")
            run(CORRELATE, "--quiet", "--records", base + ".batch.jsonl", base + ".dp.jsonl",
                base + ".hosts.jsonl")
            with open(base + ".dp.jsonl") as a, open(base + ".hosts.jsonl") as b:
                piped = a.read() + b.read()
            run(CORRELATE, "-", "--quiet", "--ttl", "3600", "--records", base + ".live.jsonl",
                input=piped)
            batch, live = alerts(base + ".batch.jsonl"), alerts(base + ".live.jsonl")
            problems += check(batch, f"seed {seed} batch") + check(live, f"seed {seed} live")
            key = lambda a: json.dumps(a, sort_keys=True)  # noqa: E731
            if sorted(map(key, batch)) != sorted(map(key, live)):
                problems.append(f"seed {seed}: live alerts differ from batch's")
            print(f"seed {seed}: {len(batch)} alerts, origins checked")
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

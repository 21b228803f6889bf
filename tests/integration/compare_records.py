#!/usr/bin/env python3
"""Compares INSERT records with a ground truth or with another run.

  compare_records.py truth RECORDS.jsonl TRUTH.json   records vs insert-gen's truth
  compare_records.py same  A.jsonl B.jsonl             two runs (SPEC invariant 1)

Compared: every `msg` (keyed by dst_ip, dst_qpn, psn_first), every final `qp` (keyed by
ip, qpn) and the `summary` counters. Wall-clock fields (wall_s, mpps) and record order are
ignored; latency percentiles may differ by 1% (SPEC 7). Prints each difference, exits 1
if there is any.
"""
import json
import sys

WALL_CLOCK = {"wall_s", "mpps"}
PERCENTILES = {"lat_p50_ns", "lat_p99_ns"}
TRUTH_ONLY = {"gen_msg"}  # annotations the generator adds for humans


def load_records(path):
    msgs, qps, summary = {}, {}, None
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            r = json.loads(line)
            kind = r.get("type")
            if kind == "msg":
                key = (r["dst_ip"], r["dst_qpn"], r["psn_first"])
                if key in msgs:
                    raise SystemExit(f"{path}:{n}: duplicate msg {key}")
                msgs[key] = r
            elif kind == "qp" and r.get("final"):
                qps[(r["ip"], r["qpn"])] = r
            elif kind == "summary":
                summary = r
    return msgs, qps, summary


def load_truth(path):
    with open(path) as f:
        t = json.load(f)
    msgs = {(m["dst_ip"], m["dst_qpn"], m["psn_first"]): m for m in t["msgs"]}
    qps = {(q["ip"], q["qpn"]): q for q in t["qps"]}
    return msgs, qps, t["summary"]


def diff_fields(what, expected, actual, out):
    for k, v in expected.items():
        if k in WALL_CLOCK or k in TRUTH_ONLY:
            continue
        got = actual.get(k, "<missing>")
        if k in PERCENTILES and isinstance(v, int) and isinstance(got, int):
            if abs(got - v) <= max(1, v // 100):
                continue
        if got != v:
            out.append(f"{what}: {k} expected {v!r} got {got!r}")


def compare(expected, actual, names):
    out = []
    for label, e, a in zip(("msg", "qp"), expected[:2], actual[:2]):
        for key in sorted(set(e) | set(a), key=str):
            if key not in a:
                out.append(f"{label} {key}: only in {names[0]}")
            elif key not in e:
                out.append(f"{label} {key}: only in {names[1]}")
            else:
                diff_fields(f"{label} {key}", e[key], a[key], out)
    if expected[2] is None or actual[2] is None:
        out.append("summary missing")
    else:
        diff_fields("summary", expected[2], actual[2], out)
    return out


def main(argv):
    if len(argv) != 4 or argv[1] not in ("truth", "same"):
        print(__doc__, file=sys.stderr)
        return 2
    mode, a, b = argv[1:]
    if mode == "truth":
        expected, actual, names = load_truth(b), load_records(a), ("truth", "records")
    else:
        expected, actual, names = load_records(a), load_records(b), (a, b)
    problems = compare(expected, actual, names)
    for p in problems[:60]:
        print(p)
    if len(problems) > 60:
        print(f"... and {len(problems) - 60} more")
    n_msgs = len(expected[0])
    print(f"{'MISMATCH' if problems else 'OK'}: {n_msgs} msgs, {len(expected[1])} qps compared,"
          f" {len(problems)} differences")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

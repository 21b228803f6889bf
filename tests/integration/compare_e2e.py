#!/usr/bin/env python3
"""Compares insert-correlate's output with insert-gen's e2e truth (--e2e-truth).

  compare_e2e.py TRUTH.jsonl ACTUAL.jsonl

Record sets are compared by key: `e2e` by (src_ip, src_qpn, psn_first, t_first_ns), `app`
(final) by (host, ip, pid), `clock` by host, `pair` by (ip, qpn), `alert` by (kind, t_ns,
victim ip, victim qpn, source ip), `congestion` by (where.node, t_start_ns); the truth's
`e2e_summary` with the actual `summary` (or `e2e_summary`), its `alerts` by kind and
`congestion` count included. Every field of a truth record
must be equal in the actual one, except the app percentiles (p50, p99 of host_ns, net_ns,
completion_ns, total_ns), which may differ by 1% relative (the correlator's histogram; the
truth's are exact nearest-rank values; `max` is exact). Fields named gen_* are the
generator's annotations and are not compared; fields only in the actual records are
ignored (extras are allowed; in an alert's objects too: the truth has no evidence.origin). Prints the first differences, exits 1 if there is any, 2 if
a file cannot be read.
"""
import json
import sys

KEYS = {
    "e2e": ("src_ip", "src_qpn", "psn_first", "t_first_ns"),
    "app": ("host", "ip", "pid"),
    "clock": ("host",),
    "pair": ("ip", "qpn"),
    "alert": ("kind", "t_ns", "victim.ip", "victim.qpn", "source.ip"),
    "congestion": ("where.node", "t_start_ns"),
}
PERCENTILE_PARTS = ("host_ns", "net_ns", "completion_ns", "total_ns")
MAX_SHOWN = 30


def load(path):
    records = {kind: {} for kind in KEYS}
    summary = None
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError as e:
                raise SystemExit(f"{path}:{n}: not JSON: {e}")
            kind = r.get("type")
            if kind in ("summary", "e2e_summary"):
                if "e2e" in r:  # the correlator's, not a dataplane summary
                    summary = r
                continue
            if kind not in KEYS or (kind == "app" and r.get("final") is False):
                continue
            key = tuple(field(r, k) for k in KEYS[kind])
            if key in records[kind]:
                raise SystemExit(f"{path}:{n}: two {kind} records for {key}")
            records[kind][key] = r
    return records, summary


def field(record, path):
    """A key's value; `a.b` is field b of object a (None when absent)."""
    for name in path.split("."):
        record = record.get(name) if isinstance(record, dict) else None
    return record


def close(expected, got):
    """Within 1% relative (at least 1 ns), for percentile values."""
    if not isinstance(expected, int) or not isinstance(got, int):
        return expected == got
    return abs(got - expected) <= max(1, abs(expected) // 100)


def diff(what, expected, actual, out):
    for k, v in expected.items():
        if k.startswith("gen_") or k == "type":
            continue
        if k not in actual:
            out.append(f"{what}: {k} missing (expected {v!r})")
            continue
        got = actual[k]
        if what.startswith("app") and k in PERCENTILE_PARTS and isinstance(v, dict):
            for p, pv in v.items():
                gp = got.get(p, "<missing>") if isinstance(got, dict) else "<missing>"
                ok = close(pv, gp) if p in ("p50", "p99") else pv == gp
                if not ok:
                    out.append(f"{what}: {k}.{p} expected {pv!r} got {gp!r}")
            continue
        if what.startswith("alert") and isinstance(v, dict) and isinstance(got, dict):
            # An alert's objects (victim, source, evidence) may carry more than the truth's:
            # evidence.origin, which the truth does not compute (docs/correlation.md 8).
            diff(f"{what}: {k}", v, got, out)
            continue
        if got != v:
            out.append(f"{what}: {k} expected {v!r} got {got!r}")


def compare(truth, actual):
    out = []
    (trecs, tsum), (arecs, asum) = truth, actual
    for kind in KEYS:
        t, a = trecs[kind], arecs[kind]
        for key in sorted(set(t) | set(a), key=str):
            if key not in a:
                out.append(f"{kind} {key}: only in the truth")
            elif key not in t:
                out.append(f"{kind} {key}: only in the actual output")
            else:
                diff(f"{kind} {key}", t[key], a[key], out)
    if tsum is None:
        out.append("the truth has no e2e_summary")
    elif asum is None:
        out.append("the actual output has no summary")
    else:
        diff("summary", tsum, asum, out)
    return out


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        truth, actual = load(argv[1]), load(argv[2])
    except OSError as e:
        print(f"compare_e2e.py: {e}", file=sys.stderr)
        return 2
    differences = compare(truth, actual)
    counts = {k: len(truth[0][k]) for k in KEYS}
    if not differences:
        print(f"same: {counts}")
        return 0
    for d in differences[:MAX_SHOWN]:
        print(d)
    if len(differences) > MAX_SHOWN:
        print(f"... and {len(differences) - MAX_SHOWN} more differences")
    print(f"{len(differences)} differences (truth: {counts})")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))

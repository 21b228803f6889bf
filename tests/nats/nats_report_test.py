#!/usr/bin/env python3
"""insert-report --nats, the merged view (docs/scale-out.md "The merged view"), against a
real nats-server the test starts on a free loopback port: insert-gen's `attacks` and
`congestion` scenarios published as a deployment publishes them, two insert-correlate
--nats instances over 8 partitions (nats_correlate_test.py's Instance) deciding what they
hold when stopped; then the page of their output stream (A) against the page of one
process's batch run over the same files (B). The data the page embeds (its chart data
blob) and its verdict must be the same; what may differ, and why:

- the header: the page's source (the stream and its URL, or the records file);
- the records count and the Counters table: a batch run ends with its summary record, the
  output stream has none (each instance's summary is its own, docs/scale-out.md);
- the alert table's order (the stream is partition after partition): compared as sets.

Also: an unreachable bus (exit 1 after --nats-wait, naming the URL), no output stream
(exit 1, one line naming it), a malformed message on the output stream (skipped, counted,
said; the page unchanged), and --nats with a records file refused.

    nats_report_test.py BUILD_ROOT SOURCE_ROOT
"""
import html
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nats_correlate_test as nct  # noqa: E402  (BUILD, SRC from sys.argv)
from bus import Failure, check, free_port, wait_until  # noqa: E402

REPORT = os.path.join(nct.BUILD, "correlator", "insert-report")
DATA = re.compile(r'<script type="application/json" id="insert-report-data">(.*?)</script>',
                  re.S)


def report(args, expect=0):
    p = subprocess.run([REPORT, *args], capture_output=True, text=True, timeout=120)
    check(p.returncode == expect, f"insert-report {' '.join(args)}: exit {p.returncode}, want "
          f"{expect}: {p.stderr.strip()[-2000:]}")
    return p


def section(page, start, end):
    """The text of the page between the element with id `start` and the one with `end`."""
    i, j = page.find(f'id="{start}"'), page.find(f'id="{end}"')
    check(i >= 0 and j > i, f"the page has no section {start}..{end}")
    return page[i:j]


def rows(fragment):
    """A table's rows as text (tags dropped), sorted: the order the records came in aside."""
    return sorted(" ".join(html.unescape(re.sub(r"<[^>]+>", " ", r)).split())
                  for r in re.findall(r"<tr[^>]*>(.*?)</tr>", fragment, re.S))


def unordered(data):
    """The chart data with the lists whose order is the records' put in one order: the
    alerts' points and the congestion episodes (record order), the tenants' series (the
    order their first message came in)."""
    if "alerts" in data:
        data["alerts"]["points"].sort(key=json.dumps)
    if "net" in data:
        data["net"]["episodes"].sort(key=json.dumps)
        data["net"]["series"].sort(key=lambda s: s["label"])
    return data


def page_parts(path):
    with open(path) as f:
        page = f.read()
    m = DATA.search(page)
    check(m is not None, f"{path}: no insert-report-data blob")
    parts = {"data": unordered(json.loads(m.group(1))),
             # The verdict box: from the heading to the note naming the records' source.
             "verdict": page[page.find("<h1>"):page.find('id="about"')],
             "charts": section(page, "latency", "alerts"),
             "about": page[page.find('id="about"'):page.find("</p>", page.find('id="about"'))]}
    for start, end in (("alerts", "episodes"), ("episodes", "apps"), ("apps", "clocks"),
                       ("clocks", "pairs"), ("pairs", "summary")):
        parts[start] = rows(section(page, start, end))
    return parts


def first_difference(a, b, path="$"):
    """Where two JSON values first differ (a path and the two values), or None."""
    if type(a) is not type(b):
        return f"{path}: {a!r} / {b!r}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            d = first_difference(a.get(k), b.get(k), f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None if len(a) == len(b) else f"{path}: {len(a)} / {len(b)} items"
    if isinstance(a, str) and a != b:  # where the texts part, with some context
        at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        return f"{path} at {at}: ...{a[max(0, at - 300):at + 300]} / ...{b[max(0, at - 300):at + 300]}"
    return None if a == b else f"{path}: {str(a)[:600]} / {str(b)[:600]}"


def merged_view(tmp, srv, scenario, prefix):
    name, base = nct.make_scenario(tmp, scenario)
    nct.publish(srv.url, base, prefix)
    batch = base + ".batch.jsonl"
    nct.run([nct.CORRELATE, "--threads", "1", "--quiet", "--records", batch,
             base + ".dp.jsonl", base + ".hosts.jsonl"])
    instances = [nct.Instance(tmp, name, srv.url, prefix, parts) for parts in nct.INSTANCES]
    try:
        wait_until(lambda: nct.consumers_done(srv.url, prefix), f"{name}: consumed", 120)
    finally:
        for i in instances:
            i.stop()
    page_a, page_b = base + ".bus.html", base + ".batch.html"
    p = report(["--nats", srv.url, "--nats-subject", prefix, "--html", page_a])
    said = re.search(r"(\d+) records from (\d+) messages of " + prefix + "-out", p.stderr)
    check(said is not None and int(said.group(1)) > 0, f"{name}: {p.stderr}")
    report([batch, "--html", page_b])
    a, b = page_parts(page_a), page_parts(page_b)
    for part in ("data", "verdict", "charts", "alerts", "episodes", "apps", "clocks", "pairs"):
        if a[part] != b[part]:
            raise Failure(f"{name}: the pages' {part} differ (bus / batch): "
                          f"{first_difference(a[part], b[part])}")
    with open(batch) as f:
        kinds = [json.loads(l)["type"] for l in f]
    # The records: the batch run's but for its summary and cgroup names (not published).
    want = sum(k not in ("summary", "cgroup") for k in kinds)
    check(int(said.group(1)) == want, f"{name}: {said.group(0)}, the batch run has {want}")
    check(f"{want} records from the output stream {prefix}-out at {srv.url}" in a["about"],
          f"{name}: page A's source: {a['about']}")
    alerts, episodes = kinds.count("alert"), kinds.count("congestion")
    return name, base, page_a, a, alerts, episodes, int(said.group(2))


def test(tmp):
    srv = nct.server(tmp).start()
    try:
        # No output stream yet: one line naming it.
        p = report(["--nats", srv.url, "--nats-subject", "none", "--html",
                    os.path.join(tmp, "x.html")], expect=1)
        err = p.stderr.strip().splitlines()
        check(len(err) == 1 and f"--nats {srv.url}: no output stream none-out on the bus" in err[0],
              p.stderr)
        # An unreachable bus: waited for --nats-wait, then one line naming the URL.
        url = f"nats://127.0.0.1:{free_port()}"
        t0 = time.monotonic()
        p = report(["--nats", url, "--nats-wait", "1.5", "--html", os.path.join(tmp, "x.html")],
                   expect=1)
        waited = time.monotonic() - t0
        check(1.5 <= waited < 6, f"gave up after {waited:.1f} s, --nats-wait 1.5")
        check(f"--nats {url}: cannot reach the bus (no server answered within 1.5 s)" in
              p.stderr.strip().splitlines()[-1], p.stderr)
        report(["x.jsonl", "--nats", srv.url, "--html", os.path.join(tmp, "x.html")], expect=2)
        check(not os.path.exists(os.path.join(tmp, "x.html")), "a page written on an error")

        summary = []
        for n, scenario in enumerate(("attacks", "congestion")):
            name, base, page_a, a, alerts, episodes, msgs = merged_view(tmp, srv, scenario,
                                                                        f"r{n}")
            summary.append(f"{name}: {msgs} messages, {alerts} alerts, {episodes} episodes")
            check(alerts > 0 if scenario == "attacks" else episodes > 0,
                  f"{name}: {alerts} alerts, {episodes} congestion episodes")
        # A malformed message on the output stream: skipped, counted, said; the page as before.
        nct.run([nct.NATS_PUBLISH, srv.url, "--raw", "r0-out.part.3", "--data",
                 '{"type":"alert"}\n'])
        page_c = base.replace("congestion", "attacks") + ".malformed.html"
        p = report(["--nats", srv.url, "--nats-subject", "r0", "--html", page_c])
        check("skipped a malformed message on r0-out.part.3" in p.stderr and
              "no Insert-Producer header" in p.stderr and
              f"1 of {int(summary[0].split()[1]) + 1} messages of r0-out were malformed" in
              p.stderr, p.stderr)
        c = page_parts(page_c)
        first = page_parts(base.replace("congestion", "attacks") + ".bus.html")
        check(c["data"] == first["data"] and c["verdict"] == first["verdict"],
              "the malformed message changed the page")
        print("; ".join(summary) + "; the merged view's data and verdict as the batch run's; "
              "unreachable bus, no stream and a malformed message told")
    finally:
        srv.stop()


def main():
    with tempfile.TemporaryDirectory(prefix="insert-nats-report-") as tmp:
        try:
            test(tmp)
        except Failure as e:
            print(f"FAIL report: {e}", file=sys.stderr)
            return 1
    print("PASS report")
    return 0


if __name__ == "__main__":
    sys.exit(main())

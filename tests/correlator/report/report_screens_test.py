#!/usr/bin/env python3
"""What report.html shows first (correlator/report/verdict.cpp, docs/correlation.md 10), in a
real headless Chromium at 1366 x 768 (chromium_session.py). Every case keeps the page, its
first screen and the whole page as PNG in $INSERT_ARTIFACTS/report/ (default: the build
directory's artifacts/report/) and prints where; every page loads with no script error or
console message and draws every chart it lists.

  attacks      insert-gen's attacks scenario through insert-dp and insert-correlate --html:
               the verdict box lies within the first 768 px; it names each alert kind of
               the records, with the count the records give, each victim (comm[pid]@host
               ip, or the address of a QP no process owns) and the QPN (hex) of each kind's
               first alert, and each claimed source only as "claimed source X (possibly
               spoofed)"; the sections follow in order - verdict, latency, timelines,
               alert and episode tables, applications, clocks, pairs, counters (the summary
               table) last; the alert timeline has a lane per kind present
  quiet        insert-gen's clean_write scenario (no alert, no episode): the verdict says
               "No alerts, no congestion episodes." on the first screen, the counters below
  congestion   hand-written records: an episode of SPEC 10 v1.3's shape (victims with
               their latency per message and baselines, contributors with their byte share,
               applications in both lists) and one of the earlier shape (a victim's
               added_net_ns summed over its messages): the verdict reads "+1.84 ms per
               message (p99 +3.20 ms), 4.1x its usual 600 us", "also contributes 31% of the bytes",
               "62% of the bytes", "-" where a field is missing, and never the sum; then
               insert-gen's congestion scenario through the correlator (whichever shape it
               writes): the episode's node and every victim on the first screen
  many_alerts  3000 alerts of three kinds in the last 2 s of a 100 s run: the timeline's x
               range fits those 2 s, its points (one per kind and time bin) spread over the
               whole plot, not piled at an edge; three lanes with their counts
  few_alerts   the report fixture's two alerts at one instant after its last message (the
               run's edge): the range is a few ms around them, both points mid-plot; four
               alerts over 3 s of a 60 s run: the range fits them, the points spread

usage: report_screens_test.py CASE"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chromium_check  # noqa: E402
import chromium_session  # noqa: E402
import fixture  # noqa: E402

SRC = os.environ.get("INSERT_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BUILD = os.environ.get("INSERT_BUILD_ROOT", os.path.join(SRC, "build"))
CORRELATE = os.path.join(BUILD, "correlator", "insert-correlate")
REPORT = os.path.join(BUILD, "correlator", "insert-report")
GEN = os.path.join(BUILD, "bench", "gen", "insert-gen")
DP = os.path.join(BUILD, "dataplane", "tools", "insert-dp")
ARTIFACTS = os.path.join(os.environ.get("INSERT_ARTIFACTS") or os.path.join(BUILD, "artifacts"),
                         "report")
WIDTH, HEIGHT = 1366, 768
SECTIONS = ["verdict", "latency", "timelines", "alerts", "episodes", "apps", "clocks", "pairs",
            "summary"]
T0 = 1_700_000_000 * 10**9


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def run(argv):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"{os.path.basename(argv[0])}: exit {r.returncode}: {r.stderr[-800:]}")
    return r


# The page's layout and chart state once it drew: boxes in page coordinates (px).
STATE = """JSON.stringify((function () {
  function box(id) {
    var el = document.getElementById(id);
    if (!el) return null;
    var r = el.getBoundingClientRect();
    return { top: r.top + window.scrollY, bottom: r.bottom + window.scrollY };
  }
  var body = document.body, verdict = document.getElementById('verdict');
  var out = { errors: body.getAttribute('data-errors'),
              rootErrors: document.documentElement.getAttribute('data-errors'),
              ready: body.getAttribute('data-charts-ready'),
              expected: body.getAttribute('data-charts-expected'),
              list: body.getAttribute('data-chart-list'), canvases: {},
              viewport: [window.innerWidth, window.innerHeight],
              verdict: box('verdict'), verdictClass: verdict ? verdict.className : null,
              verdictText: verdict ? verdict.innerText : '', summaryTable: box('summary-table'),
              text: body.innerText, sections: {}, alerts: null, verdictRows: [],
              data: JSON.parse(document.getElementById('insert-report-data').textContent) };
  document.querySelectorAll('#verdict-alerts tbody tr').forEach(function (tr) {
    out.verdictRows.push(Array.prototype.map.call(tr.cells, function (td) {
      return td.innerText; })); });
  %s.forEach(function (id) { out.sections[id] = box(id); });
  document.querySelectorAll('canvas').forEach(function (c) {
    out.canvases[c.id] = c.getAttribute('data-points'); });
  var chart = window.Chart && Chart.getChart('chart-alerts');
  if (chart) {
    var points = [];
    chart.data.datasets.forEach(function (d, i) {
      chart.getDatasetMeta(i).data.forEach(function (e, j) {
        points.push({ px: e.x, t: d.data[j].x, lane: d.data[j].y }); }); });
    out.alerts = { min: chart.scales.x.min, max: chart.scales.x.max, left: chart.chartArea.left,
                   right: chart.chartArea.right, points: points,
                   lanes: chart.scales.y.ticks.map(function (t) { return t.label; }) };
  }
  return out;
})())""" % json.dumps(SECTIONS)


def look(page, name):
    """Opens the page at 1366 x 768, checks that it drew with no error, keeps it and its
    screenshots (first screen, whole page) as artifacts; returns STATE."""
    os.makedirs(ARTIFACTS, exist_ok=True)
    browser = chromium_session.Browser(WIDTH, HEIGHT)
    try:
        browser.open(page)
        browser.wait_for("document.readyState === 'complete' && document.body !== null && "
                         "document.body.hasAttribute('data-charts-ready')", "drew its charts")
        state = browser.evaluate(STATE)
        check(state is not None, f"{name}: the page's state could not be read")
        state = json.loads(state)
        first = browser.screenshot(os.path.join(ARTIFACTS, f"{name}-first-screen.png"))
        full = browser.screenshot(os.path.join(ARTIFACTS, f"{name}-full-page.png"), full_page=True)
        console = browser.console()
    finally:
        browser.close()
    kept = os.path.join(ARTIFACTS, f"{name}.html")
    shutil.copyfile(page, kept)
    print(f"  {name}: {first}, {full}, {kept}")
    check(state["viewport"] == [WIDTH, HEIGHT], f"{name}: window {state['viewport']}")
    check(state["errors"] == "[]" and state["rootErrors"] == "[]",
          f"{name}: script errors {state['errors']} {state['rootErrors']}")
    check(console == [], f"{name}: console messages {console[:5]}")
    listed = dict(item.split("=") for item in (state["list"] or "").split())
    check(state["ready"] == state["expected"] == str(len(listed)),
          f"{name}: charts ready {state['ready']}, expected {state['expected']}, listed {listed}")
    for cid, points in listed.items():
        check(state["canvases"].get(cid) == points and int(points) > 0,
              f"{name}: chart {cid} lists {points} points, drew {state['canvases'].get(cid)}")
    return state


def check_first_screen(state, name):
    """The verdict within the first screen; the sections in the page's order, the counters
    (summary table) last and below the verdict."""
    v = state["verdict"]
    check(v is not None, f"{name}: no verdict section")
    check(0 <= v["top"] and v["bottom"] <= HEIGHT,
          f"{name}: the verdict spans {v['top']:.0f}-{v['bottom']:.0f} px, not within the first {HEIGHT}")
    tops = [(s, state["sections"][s]["top"]) for s in SECTIONS if state["sections"].get(s)]
    check([s for s, _ in tops] == SECTIONS, f"{name}: sections {[s for s, _ in tops]}")
    check(all(a[1] < b[1] for a, b in zip(tops, tops[1:])), f"{name}: sections out of order: {tops}")
    table = state["summaryTable"]
    check(table is not None and table["top"] >= v["bottom"],
          f"{name}: the counters table at {table} is not below the verdict ({v['bottom']:.0f} px)")


def party(p):
    """An application as the page names it (alert_groups.cpp party_name)."""
    if p.get("pid") is None:
        return p["ip"]
    host = f"@{p['host']}" if p.get("host") is not None else ""
    return f"{p['comm']}[{p['pid']}]{host} {p['ip']}"


def correlate(tmp, scenario, seed=41):
    """insert-gen SCENARIO -> insert-dp replay -> insert-correlate --html: (records, page)."""
    base = os.path.join(tmp, scenario)
    run([GEN, "--scenario", scenario, "--seed", str(seed), "--out", base + ".pcap",
         "--truth", base + ".truth.json", "--host-traces", base + ".hosts.jsonl", "--quiet"])
    run([DP, "replay", base + ".pcap", "--quiet", "--records", base + ".dp.jsonl"])
    run([CORRELATE, base + ".dp.jsonl", base + ".hosts.jsonl", "--quiet", "--records",
         base + ".c.jsonl", "--html", base + ".html"])
    return [json.loads(line) for line in open(base + ".c.jsonl")], base + ".html"


def report(tmp, name, records):
    """insert-report on hand-written records: the page's path."""
    path, page = os.path.join(tmp, name + ".jsonl"), os.path.join(tmp, name + ".html")
    with open(path, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)
    run([REPORT, path, "--html", page])
    return page


def case_attacks(tmp):
    records, page = correlate(tmp, "attacks")
    alerts = [r for r in records if r["type"] == "alert"]
    kinds = {}
    for a in alerts:
        kinds[a["kind"]] = kinds.get(a["kind"], 0) + 1
    check(set(kinds) == {"rkey_unknown", "rkey_stale", "out_of_bounds", "access_denied", "rkey_scan",
                         "unowned_qp", "peer_mismatch", "injected_message"}, f"alert kinds {kinds}")
    state = look(page, "attacks")
    check_first_screen(state, "attacks")
    text = state["verdictText"]
    check(state["verdictClass"] == "critical", f"verdict class {state['verdictClass']}")
    victims = {party(a["victim"]) for a in alerts}
    critical = sum(a["severity"] == "critical" for a in alerts)
    head = f"{len(alerts)} alerts ({critical} critical) against {len(victims)} victims"
    check(head in text, f"the verdict does not say {head!r}: {text[:300]!r}")
    for kind, n in kinds.items():
        check(f"{n} {kind}" in text, f"the verdict does not count {n} {kind}")
        first = min((a for a in alerts if a["kind"] == kind), key=lambda a: a["t_ns"])
        check(f"0x{first['victim']['qpn']:06x}" in text, f"{kind}: the victim QP of its first alert")
    for v in victims:
        check(v in text, f"the verdict does not name the victim {v}")
    # A row per kind, source and victim process: "KIND | from SOURCE | against VICTIM QP ...";
    # under a claimed source, where its packet came from (docs/correlation.md 8).
    rows = state["verdictRows"]
    for a in alerts:
        source = party(a["source"])
        said = f"claimed source {source} (possibly spoofed)" if a["source"]["claimed"] else source
        origin = a["evidence"].get("origin")
        came = f"\narrived with source MAC {origin['src_mac']}, TTL {origin['ttl']}" if origin else ""
        check(any(r[0].endswith(" " + a["kind"]) and r[1].split("\n")[0] == said and
                  r[1][len(said):].startswith(came) and
                  r[2].startswith(party(a["victim"]) + " QP ") for r in rows),
              f"{a['kind']}: no row from {said!r}{came!r} against {party(a['victim'])}: {rows}")
    traced = {party(a["source"]) for a in alerts if not a["source"]["claimed"]}
    for r in rows:  # a source never claims more than its records say
        said = r[1].split("\n")[0]
        check(said in traced or (said.startswith("claimed source ") and
                                 said.endswith(" (possibly spoofed)")), f"source cell {r[1]!r}")
    lanes = [lane.split(" (")[0] for lane in state["alerts"]["lanes"]]
    check(sorted(lanes) == sorted(kinds), f"alert lanes {lanes}")
    spread(state, "attacks")
    print(f"PASS attacks: the verdict ({state['verdict']['bottom']:.0f} px) names {len(kinds)} kinds, "
          f"{len(victims)} victims, the claimed sources as claimed; the counters last")


def case_quiet(tmp):
    records, page = correlate(tmp, "clean_write")
    check(not [r for r in records if r["type"] in ("alert", "congestion")], "clean_write: alerts")
    check(sum(r["type"] == "e2e" for r in records) > 0, "clean_write: no e2e records")
    state = look(page, "quiet")
    check_first_screen(state, "quiet")
    check("No alerts, no congestion episodes." in state["verdictText"],
          f"the verdict says {state['verdictText']!r}")
    check(state["verdictClass"] == "quiet" and state["alerts"] is None, "quiet: alert marks")
    print(f"PASS quiet: 'No alerts, no congestion episodes.' within {state['verdict']['bottom']:.0f} px")


def app(ip, pid, comm, host, cgroup=7):
    return {"ip": ip, "pid": pid, "comm": comm, "cgroup": cgroup, "host": host}


def e2e(a, t_ns, net_ns):
    return {"type": "e2e", "src_ip": a["ip"], "src_qpn": 17, "dst_ip": "10.0.0.2", "dst_qpn": 50,
            "op": "WRITE", "bytes": 4096, "psn_first": 1, "wr_id": 1, "pid": a["pid"],
            "comm": a["comm"], "cgroup": a["cgroup"], "host": a["host"], "t_post_ns": t_ns - 1000,
            "t_first_ns": t_ns, "t_ack_ns": t_ns + net_ns, "t_poll_ns": t_ns + net_ns + 1000,
            "host_ns": 1000, "net_ns": net_ns, "completion_ns": 1000, "total_ns": net_ns + 2000,
            "retx_pkts": 0, "naks": 0, "status": "ok", "match": "exact", "signaled": True,
            "t_covered_ns": None}


SUMMARY = {"type": "summary", "e2e": 1, "alerts": {}, "congestion": 0}
KV = app("10.0.0.3", 500, "kv-server", "hC")
BULK = app("10.0.0.1", 100, "bulk-copy", "hA")
LAT = app("10.0.0.4", 700, "ib_write_lat", "hD")
OLD = app("10.0.0.5", 900, "old-shape", "hE")
# An added_net_ns summed over 2,000 messages, as the earlier record shape had it: never shown.
OLD_SUM = 58031590800


def congestion_records():
    recs = [dict(SUMMARY)]
    for k in range(50):
        for a, net in ((KV, 600_000), (BULK, 40_000), (LAT, 900_000)):
            recs.append(e2e(a, T0 + k * 10**7, net))
    recs.append({
        "type": "congestion", "t_start_ns": T0 + 2 * 10**8, "t_end_ns": T0 + 3 * 10**8,
        "where": {"node": "hB", "dst_ips": ["10.0.0.2"]},
        "signals": {"cnps": 40, "ecn_ce": 80, "retx_pkts": 0, "naks": 0, "p99_net_ns": 3_400_000,
                    "msgs": 90},
        "victims": [
            # 2.44 ms per message in the episode, 0.6 ms usually: +1.84 ms, 4.1x; p99 3.4 vs 0.2.
            dict(KV, msgs=20, net_ns_mean=2_440_000, net_ns_p99=3_400_000,
                 baseline_net_ns_mean=600_000, baseline_net_ns_p99=200_000,
                 added_net_ns_mean=1_840_000, added_net_ns_p99=3_200_000, cnps=12, contributor=True),
            # No message of its own to hB outside the episode: its baselines are null.
            dict(LAT, msgs=30, net_ns_mean=950_000, net_ns_p99=1_200_000, baseline_net_ns_mean=None,
                 baseline_net_ns_p99=None, added_net_ns_mean=None, added_net_ns_p99=None, cnps=0,
                 contributor=False)],
        "contributors": [
            dict(BULK, msgs=40, bytes=6_200_000, bytes_share=0.62, cnps=28, victim=False),
            dict(KV, msgs=20, bytes=3_100_000, bytes_share=0.31, cnps=12, victim=True),
            dict(LAT, msgs=30, bytes=700_000, bytes_share=0.07, cnps=0, victim=False)]})
    recs.append({
        "type": "congestion", "t_start_ns": T0 + 4 * 10**8, "t_end_ns": T0 + 4 * 10**8 + 5 * 10**6,
        "where": {"node": "hF", "dst_ips": ["10.0.0.6"]},
        "signals": {"cnps": 3, "ecn_ce": 0, "retx_pkts": 0, "naks": 0, "p99_net_ns": 90_000,
                    "baseline_net_ns": 5_000, "msgs": 2000},
        "victims": [dict(OLD, msgs=2000, added_net_ns=OLD_SUM, cnps=3)],
        "contributors": [dict(OLD, msgs=2000, bytes=8_192_000, cnps=3)]})
    return recs


def case_congestion(tmp):
    page = report(tmp, "congestion", congestion_records())
    state = look(page, "congestion")
    check_first_screen(state, "congestion")
    text, everything = state["verdictText"], state["text"]
    for said in ("2 congestion episodes toward hB, hF",
                 "Congestion toward hB (10.0.0.2) for 100 ms: p99 network latency 3.40 ms",
                 "kv-server[500]@hC 10.0.0.3: +1.84 ms per message (p99 +3.20 ms), 4.1x its usual 600 "
                 "us, "
                 "20 messages, 12 CNPs; also contributes 31% of the bytes",
                 "bulk-copy[100]@hA 10.0.0.1: 62% of the bytes (6.20 MB in 40 messages)",
                 "kv-server[500]@hC 10.0.0.3: 31% of the bytes (3.10 MB in 20 messages), also a victim",
                 "ib_write_lat[700]@hD 10.0.0.4: 7.0% of the bytes",
                 "ib_write_lat[700]@hD 10.0.0.4: 950 us per message (p99 1.20 ms), added: - (no "
                 "baseline of its own), 30 messages",
                 "old-shape[900]@hE 10.0.0.5: - per message (p99 -), 2000 messages, 3 CNPs; also a "
                 "contributor",
                 "old-shape[900]@hE 10.0.0.5: - of the bytes (8.19 MB in 2000 messages), also a victim"):
        check(said in text, f"the verdict does not say {said!r}: {text!r}")
    table = everything[everything.index("Congestion episodes"):]
    check("ib_write_lat[700]@hD 10.0.0.4: 950 us per message (p99 1.20 ms), added: - (no baseline "
          "of its own), 30 messages" in table and "bulk-copy[100]@hA 10.0.0.1: 62% of the bytes" in table,
          "the episodes' table does not phrase victims and contributors as the verdict does")
    for sum_text in (str(OLD_SUM), f"{OLD_SUM / 1e3:.1f}", "58.03", "58.0 s"):
        check(sum_text not in everything, f"the page shows the summed added latency ({sum_text})")
    check("added_net_ns" not in everything, "a raw field name on the page")

    # The correlator's own episode (insert-gen's congestion scenario), whichever shape it writes.
    records, page = correlate(tmp, "congestion")
    episodes = [r for r in records if r["type"] == "congestion"]
    check(len(episodes) == 1, f"{len(episodes)} episodes in the congestion scenario")
    state = look(page, "congestion-scenario")
    check_first_screen(state, "congestion-scenario")
    text, everything = state["verdictText"], state["text"]
    e = episodes[0]
    check(f"Congestion toward {e['where']['node']} ({', '.join(e['where']['dst_ips'])})" in text,
          f"the verdict does not name the episode's node: {text!r}")
    for v in e["victims"][:4]:  # the verdict's: the record's first four
        check(party(v) + ":" in text, f"the verdict does not name the victim {party(v)}")
    for v in e["victims"]:
        if v.get("added_net_ns", 0) >= 10_000:  # the earlier shape's sum
            check(str(v["added_net_ns"]) not in everything and
                  f"+{v['added_net_ns'] / 1e3:.1f} us" not in everything, "the page shows a sum")
    print(f"PASS congestion: per message, byte shares, both roles, '-' for missing fields, no sum; "
          f"the correlator's episode toward {e['where']['node']} on the first screen")


def alert(kind, t_ns, victim, qpn, count=1, t_last_ns=None, severity="warning"):
    return {"type": "alert", "kind": kind, "severity": severity, "t_ns": t_ns, "count": count,
            "victim": dict(victim, qpn=qpn), "source": {"ip": "10.0.0.9", "qpn": None, "pid": None,
                                                        "comm": None, "host": None, "claimed": True},
            "evidence": {"op": "WRITE"}, "t_last_ns": t_ns if t_last_ns is None else t_last_ns}


def run_of(seconds):
    """An e2e record every second over the run: the report's time span."""
    return [dict(SUMMARY)] + [e2e(BULK, T0 + s * 10**9, 5000) for s in range(seconds + 1)]


def alert_marks(state, name):
    """(chart state, plot width, the points' x in px, sorted); the chart's axis segments
    (alert_axis.hpp: [from s, to s, x0, x1, alerts]) in a["segments"]."""
    a = state["alerts"]
    check(a is not None and a["points"], f"{name}: no alert timeline")
    a["segments"] = state["data"]["alerts"]["segments"]
    width = a["right"] - a["left"]
    xs = sorted(p["px"] for p in a["points"])
    return a, width, xs


def spread(state, name):
    """Nothing piled at one edge of the alert timeline: no twentieth of the plot holds more
    than half the points, and both halves hold some."""
    a, width, xs = alert_marks(state, name)
    for k in range(20):
        lo = a["left"] + k * width / 20
        inside = sum(lo <= x < lo + width / 20 for x in xs)
        check(inside <= len(xs) / 2, f"{name}: {inside} of {len(xs)} points within "
              f"{lo:.0f}-{lo + width / 20:.0f} px (plot {a['left']:.0f}-{a['right']:.0f})")
    middle = a["left"] + width / 2
    check(any(x < middle for x in xs) and any(x >= middle for x in xs),
          f"{name}: the points {xs} lie in one half of the plot")


def case_many_alerts(tmp):
    recs = run_of(100)
    server = app("10.0.0.2", 300, "server", "hB")
    store = app("10.0.0.7", 310, "store", "hG")
    for i in range(3000):  # the last 2 s of the run: 97 s .. 99 s
        kind = "rkey_unknown" if i % 3 else ("rkey_stale" if i % 6 else "out_of_bounds")
        recs.append(alert(kind, T0 + 97 * 10**9 + i * (2 * 10**9 // 3000), (server, store)[i % 2],
                          0x100 + i % 20))
    page = report(tmp, "many-alerts", recs)
    state = look(page, "many-alerts")
    check_first_screen(state, "many-alerts")
    check("3000 alerts against 2 victims: 2000 rkey_unknown, 500 rkey_stale, 500 out_of_bounds."
          in state["verdictText"], f"the verdict says {state['verdictText'][:200]!r}")
    a, width, xs = alert_marks(state, "many-alerts")
    (lo, hi, *_), = a["segments"]
    check(96.9 <= lo <= 97 and 99 <= hi <= 99.1, f"the time axis {lo}-{hi} s does not fit the alerts' 97-99 s")
    check(a["lanes"] == ["rkey_unknown (2000)", "rkey_stale (500)", "out_of_bounds (500)"],
          f"lanes {a['lanes']}")
    check(len(xs) <= 3 * 120, f"{len(xs)} points: more than a point per kind and bin")
    check(xs[0] - a["left"] < 0.1 * width and a["right"] - xs[-1] < 0.1 * width,
          f"the points span {xs[0]:.0f}-{xs[-1]:.0f} px of {a['left']:.0f}-{a['right']:.0f}")
    gap = max(b - x for x, b in zip(xs, xs[1:]))
    check(gap < 0.05 * width, f"a gap of {gap:.0f} px of {width:.0f} between points")
    spread(state, "many-alerts")
    print(f"PASS many_alerts: 3000 alerts as {len(xs)} points over {lo:.2f}-{hi:.2f} s "
          f"of the 100 s run, spread over the plot ({width:.0f} px), 3 lanes")


def case_few_alerts(tmp):
    # The fixture's two alerts, at one instant after the last message (the run's edge).
    dp, trace = fixture.write_inputs(tmp)
    page = os.path.join(tmp, "edge.html")
    run([CORRELATE, dp, trace, "--same-clock", "--quiet", "--html", page])
    state = look(page, "few-alerts-edge")
    check_first_screen(state, "few-alerts-edge")
    a, width, xs = alert_marks(state, "few-alerts-edge")
    (lo, hi, *_), = a["segments"]
    check(len(xs) == 2 and hi - lo <= 0.05 * 0.5 and lo < 0.5 < hi,
          f"the time axis {lo}-{hi} s does not fit the alerts at 0.5 s")
    check(all(abs(x - (a["left"] + width / 2)) < 0.1 * width for x in xs), f"points at {xs} px")
    # Four alerts over 10-13 s of a 60 s run, one of them with offences until 13 s.
    server = app("10.0.0.2", 300, "server", "hB")
    recs = run_of(60) + [alert("rkey_unknown", T0 + 10 * 10**9, server, 0x50),
                         alert("rkey_unknown", T0 + 10_500 * 10**6, server, 0x51),
                         alert("rkey_scan", T0 + 11 * 10**9, server, 0x50, 9, T0 + 13 * 10**9,
                               "critical"),
                         alert("unowned_qp", T0 + 12 * 10**9, {"ip": "10.0.0.3", "pid": None,
                                                               "comm": None, "cgroup": None,
                                                               "host": None}, 0x77)]
    state = look(report(tmp, "spread", recs), "few-alerts-spread")
    check_first_screen(state, "few-alerts-spread")
    a, width, xs = alert_marks(state, "few-alerts-spread")
    (lo, hi, *_), = a["segments"]
    check(9.5 <= lo < 10 and 13 < hi <= 13.5, f"the time axis {lo}-{hi} s does not fit the alerts' 10-13 s")
    check(xs[0] - a["left"] < 0.1 * width and xs[-1] - xs[0] > 0.5 * width, f"points at {xs} px")
    spread(state, "few-alerts-spread")
    check(a["lanes"] == ["rkey_unknown (2)", "rkey_scan (1)", "unowned_qp (1)"], f"lanes {a['lanes']}")
    check("10.0.0.3 QP 0x000077 (no traced process owns it)" in state["verdictText"],
          "the unowned QP's victim")
    print("PASS few_alerts: two alerts at one instant at the run's edge mid-plot, four alerts over "
          "10-13 s of a 60 s run spread over the plot")


def main():
    case = sys.argv[1] if len(sys.argv) > 1 else ""
    fn = globals().get("case_" + case)
    if not fn:
        print(__doc__)
        return 2
    print(f"screenshots and pages: {ARTIFACTS}/")
    with tempfile.TemporaryDirectory(prefix="insert-screens-") as tmp:
        try:
            fn(tmp)
        except (Failure, chromium_check.PageFailure) as e:
            print(f"FAIL {case}: {e}")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

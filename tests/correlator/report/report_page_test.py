#!/usr/bin/env python3
"""The HTML report (correlator/report, docs/correlation.md 10) on fixed records
(fixture.py):

  page            insert-correlate --html on the fixture loads in headless Chromium with no
                  script error or console message; it draws 4 charts with exactly the data
                  points derived in fixture.py; the hostile comm and host name are text on
                  the page, never markup; insert-report on the --records file makes the same
                  charts from the same data
  live            the same inputs through a pipe (live mode): the same chart data as batch
  cli             insert-report's errors: no input, unreadable or empty input, --html onto
                  its input (refused, the input intact), no records in the input; --help
  correlate_html  insert-correlate --html refuses an input or the --records file as the
                  page, and a failed run leaves an existing page alone

usage: report_page_test.py CASE"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chromium_check  # noqa: E402
import fixture  # noqa: E402

SRC = os.environ.get("INSERT_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BUILD = os.environ.get("INSERT_BUILD_ROOT", os.path.join(SRC, "build"))
CORRELATE = os.path.join(BUILD, "correlator", "insert-correlate")
REPORT = os.path.join(BUILD, "correlator", "insert-report")


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, **kw)


def chart_data(page):
    """The page's JSON data block, parsed."""
    text = open(page).read()
    m = re.search(r'<script type="application/json" id="insert-report-data">(.*?)</script>', text, re.S)
    check(m, f"{page}: no data block")
    return json.loads(m.group(1))


def case_page(tmp):
    dp, trace = fixture.write_inputs(tmp)
    records, page = os.path.join(tmp, "c.jsonl"), os.path.join(tmp, "report.html")
    r = run([CORRELATE, dp, trace, "--same-clock", "--records", records, "--html", page, "--quiet"])
    check(r.returncode == 0 and r.stderr == "", f"insert-correlate: {r.returncode} {r.stderr}")
    recs = [json.loads(l) for l in open(records)]
    kinds = sorted(a["kind"] for a in recs if a["type"] == "alert")
    check(kinds == ["peer_mismatch", "rkey_unknown"], f"alerts {kinds}")
    check(sum(r["type"] == "congestion" for r in recs) == 1, "one congestion episode")
    check(sum(r["type"] == "e2e" for r in recs) == 340, "340 e2e records")
    text = open(page).read()
    check("http://" not in text.replace("http://www.w3.org", "") and "https://" not in
          text.replace("https://www.chartjs.org", "").replace("https://github.com", ""),
          "the page names a network address")
    t0 = time.monotonic()
    dom = chromium_check.check(page, fixture.EXPECTED_CHARTS)
    took = time.monotonic() - t0
    text_nodes = "".join(dom.text)
    check(fixture.HOSTILE_COMM + "[100]" in text_nodes, "the hostile comm is not shown as text")
    check(fixture.HOSTILE_HOST in text_nodes, "the hostile host name is not shown as text")
    check("data-pwned" not in dom.body, "the hostile host name ran as a script")
    check("&lt;svg onload=x()&gt;[100]" in dom.dump, "the comm is not escaped in the DOM")
    # The same page data from the records file, through insert-report.
    page2 = os.path.join(tmp, "report2.html")
    r = run([REPORT, records, "--html", page2])
    check(r.returncode == 0 and r.stderr == "", f"insert-report: {r.returncode} {r.stderr}")
    check(chart_data(page2) == chart_data(page), "insert-report drew other data than --html")
    print(f"PASS page: charts {fixture.EXPECTED_CHARTS}, no errors, hostile text escaped "
          f"(chromium {took:.1f} s)")


def case_live(tmp):
    dp, trace = fixture.write_inputs(tmp)
    batch = os.path.join(tmp, "batch.html")
    r = run([CORRELATE, dp, trace, "--same-clock", "--html", batch, "--quiet"])
    check(r.returncode == 0, f"batch: {r.stderr}")
    # Both inputs in one time-ordered stream through a pipe.
    lines = []
    for path in (dp, trace):
        for l in open(path):
            rec = json.loads(l)
            lines.append((rec.get("wall_ns", rec.get("t_first_ns", 0)), l))
    lines.sort(key=lambda x: x[0])
    live = os.path.join(tmp, "live.html")
    p = subprocess.Popen([CORRELATE, "-", "--same-clock", "--html", live, "--quiet", "--max-delay", "0"],
                         stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _, err = p.communicate("".join(l for _, l in lines), timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    check(p.returncode == 0, f"live: {p.returncode} {err}")
    b, l = chart_data(batch), chart_data(live)
    check(l == b, f"live page data differs from batch: {json.dumps(l)[:300]} vs {json.dumps(b)[:300]}")
    print("PASS live: the page of a piped run draws the batch run's data")


def case_cli(tmp):
    records = os.path.join(tmp, "c.jsonl")
    dp, trace = fixture.write_inputs(tmp)
    check(run([CORRELATE, dp, trace, "--same-clock", "--records", records, "--quiet"]).returncode == 0, "correlate")
    before = open(records).read()
    page = os.path.join(tmp, "p.html")

    def fails(argv, needle):
        r = run(argv)
        lines = r.stderr.strip().splitlines()
        check(r.returncode == 2 and len(lines) == 1 and needle in lines[0] and
              lines[0].startswith("insert-report: "), f"{argv[1:]}: {r.returncode} {r.stderr!r}")
        check(not os.path.exists(page), f"{argv[1:]}: a page was written")

    fails([REPORT, "--html", page], "records is required")
    fails([REPORT, records], "--html is required")
    fails([REPORT, os.path.join(tmp, "missing.jsonl"), "--html", page], "missing.jsonl")
    empty = os.path.join(tmp, "empty.jsonl")
    open(empty, "w").close()
    fails([REPORT, empty, "--html", page], "no insert-correlate records")
    fails([REPORT, dp, "--html", page], "no insert-correlate records in 341 lines")
    # insert-dp's own output ends with its summary record: not insert-correlate's either.
    dp_run = os.path.join(tmp, "dp-run.jsonl")
    with open(dp_run, "w") as f:
        f.write(open(dp).read() + '{"type":"summary","pkts":682,"roce_pkts":682,"msgs":341}\n')
    fails([REPORT, dp_run, "--html", page], "no insert-correlate records in 342 lines")
    fails([REPORT, records, "--html", records], "refusing to overwrite")
    fails([REPORT, records, "--html", tmp], "is a directory")
    fails([REPORT, records, "--html", page, "--chartjs", os.path.join(tmp, "none.js")], "none.js")
    check(open(records).read() == before, "the input changed")
    link = os.path.join(tmp, "link.html")
    os.symlink(records, link)
    fails([REPORT, records, "--html", link], "refusing to overwrite")
    check(open(records).read() == before, "the input changed through a link")
    r = run([REPORT, "--help"])
    check(r.returncode == 0 and "--html" in r.stdout and r.stderr == "", "--help")
    # Mixed input: the records are drawn, the other lines counted on stderr.
    mixed = os.path.join(tmp, "mixed.jsonl")
    with open(mixed, "w") as f:
        f.write(before + "not json\n")
    r = run([REPORT, mixed, "--html", page])
    check(r.returncode == 0 and r.stderr.strip() ==
          f"insert-report: {mixed}: 1 of {before.count(chr(10)) + 1} lines are not insert-correlate "
          "records (skipped)", f"mixed: {r.returncode} {r.stderr!r}")
    check(chart_data(page)["cdf"][0]["messages"] == 320, "mixed: the records were not drawn")
    # Standard input.
    os.remove(page)
    r = subprocess.run([REPORT, "-", "--html", page], input=before, capture_output=True, text=True, timeout=60)
    check(r.returncode == 0 and os.path.exists(page), f"stdin: {r.stderr}")
    print("PASS cli: every bad invocation is one line and exit 2; inputs are never overwritten")


def case_correlate_html(tmp):
    dp, trace = fixture.write_inputs(tmp)
    records = os.path.join(tmp, "c.jsonl")
    before = open(dp).read()
    for argv, needle in (([dp, trace, "--html", dp], "is the input"),
                         ([dp, trace, "--records", records, "--html", records], "is the --records output"),
                         ([dp, trace, "--html", ""], "--html: empty path")):
        r = run([CORRELATE, *argv, "--quiet"])
        lines = r.stderr.strip().splitlines()
        check(r.returncode == 2 and len(lines) == 1 and needle in lines[0], f"{argv}: {r.returncode} {r.stderr!r}")
    check(open(dp).read() == before, "an input changed")
    # A run that fails (its --records cannot be written) leaves an existing page alone.
    page = os.path.join(tmp, "page.html")
    with open(page, "w") as f:
        f.write("old page")
    r = run([CORRELATE, dp, trace, "--records", os.path.join(tmp, "no", "such", "dir.jsonl"),
             "--html", page, "--quiet"])
    check(r.returncode == 2 and open(page).read() == "old page", f"failed run: {r.returncode} {r.stderr!r}")
    check(not [f for f in os.listdir(tmp) if ".tmp-" in f], "a temporary page was left")
    print("PASS correlate_html: --html never replaces an input or the records; a failed run writes no page")


def main():
    case = sys.argv[1] if len(sys.argv) > 1 else ""
    fn = globals().get("case_" + case)
    if not fn:
        print(__doc__)
        return 2
    with tempfile.TemporaryDirectory(prefix="insert-report-") as tmp:
        try:
            fn(tmp)
        except (Failure, chromium_check.PageFailure) as e:
            print(f"FAIL {case}: {e}")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

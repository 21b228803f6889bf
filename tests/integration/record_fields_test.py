#!/usr/bin/env python3
"""insert-dp's and insert-correlate's records against the field table
(dataplane/common/record_fields.cpp, docs/records.md): on every built-in insert-gen scenario
but `large` (the attacks and congestion ones give the alert and congestion records),
insert-gen -> insert-dp replay -> insert-correlate with the scenario's host traces, batch,
and live through a pipe for the attacks and congestion scenarios. Fails when a writer emits
a field (path) the table lacks or of another type, a null the table does not allow, or
when the table lists a field, not marked conditional, that no record of the run had.
insert-gen's host traces, which stand in for insert-trace's records, may only hold fields
of insert-trace's table (trace_test.py checks insert-trace itself). Every summary carries
the schema version the programs' --version prints.

usage: record_fields_test.py BUILD_ROOT SOURCE_ROOT
"""
import json
import os
import subprocess
import sys
import tempfile

BUILD, SRC = sys.argv[1:3]
sys.path.insert(0, os.path.join(SRC, "tests", "dataplane", "common"))
from record_fields_check import FieldCheck, load_table  # noqa: E402

GEN = os.path.join(BUILD, "bench", "gen", "insert-gen")
DP = os.path.join(BUILD, "dataplane", "tools", "insert-dp")
CORRELATE = os.path.join(BUILD, "correlator", "insert-correlate")
PRINTER = os.path.join(BUILD, "tests", "dataplane", "common", "record_fields_print")
LIVE = ("attacks", "congestion")


def run(*args, **kwargs):
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=300, **kwargs)
    if p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
    return p.stdout


def lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def schema_of(program):
    """The schema version the second line of --version names: 'record schema 1.3 (...)'."""
    out = run(program, "--version").splitlines()
    if len(out) != 2 or not out[1].startswith("record schema "):
        sys.exit(f"FAIL: {program} --version: {out}")
    return out[1].split()[2]


def main():
    table = load_table(PRINTER)
    dp, trace, correlate = (FieldCheck(table, p)
                            for p in ("insert-dp", "insert-trace", "insert-correlate"))
    schemas = {"insert-dp": schema_of(DP), "insert-correlate": schema_of(CORRELATE)}
    failures = []
    if schemas["insert-dp"] != schemas["insert-correlate"]:
        failures.append(f"--version schemas differ: {schemas}")
    scenarios = [s for s in run(GEN, "--list-scenarios").split() if s != "large"]
    with tempfile.TemporaryDirectory(prefix="insert-record-fields-") as tmp:
        for name in scenarios:
            base = os.path.join(tmp, name)
            run(GEN, "--scenario", name, "--seed", "5", "--out", base + ".pcap",
                "--truth", base + ".truth.json", "--host-traces", base + ".hosts.jsonl",
                "--quiet")
            run(DP, "replay", base + ".pcap", "--quiet", "--records", base + ".dp.jsonl")
            run(CORRELATE, "--quiet", "--records", base + ".c.jsonl", base + ".dp.jsonl",
                base + ".hosts.jsonl")
            outputs = [(dp, base + ".dp.jsonl"), (trace, base + ".hosts.jsonl"),
                       (correlate, base + ".c.jsonl")]
            if name in LIVE:
                with open(base + ".dp.jsonl") as a, open(base + ".hosts.jsonl") as b:
                    piped = a.read() + b.read()
                run(CORRELATE, "-", "--quiet", "--ttl", "3600", "--records", base + ".live.jsonl",
                    input=piped)
                outputs.append((correlate, base + ".live.jsonl"))
            for check, path in outputs:
                for n, record in enumerate(lines(path), 1):
                    check.record(record, f"{name}: {os.path.basename(path)}:{n}",
                                 complete=check is not trace)
                    if record.get("type") == "summary" and check is not trace:
                        want = schemas[check.producer]
                        if record.get("schema") != want:
                            failures.append(f"{name}: {os.path.basename(path)}:{n}: summary "
                                            f"schema {record.get('schema')!r}, --version {want}")
    for check in (dp, trace, correlate):
        failures += check.errors
    # insert-gen writes some of insert-trace's records only: its unseen fields are no error.
    failures += [f"no record had {field}" for field in dp.unseen() + correlate.unseen()]
    for f in failures:
        print("FAIL:", f)
    print(f"{len(scenarios)} scenarios: {dp.records} insert-dp, {correlate.records} "
          f"insert-correlate and {trace.records} insert-gen host records checked; "
          f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

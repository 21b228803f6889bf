#!/usr/bin/env python3
"""The producers' NATS JetStream output (docs/scale-out.md) against a real nats-server that
each test starts on a free loopback port (-js, its store in the test's directory), read back
with nats_dump (libnats). Every record a producer wrote to its file must be in the stream
exactly once per partition the rule gives it, in order, and nowhere else; every message's
headers as documented (the partition count among them).

    nats_test.py BUILD_ROOT SOURCE_ROOT TEST_NAME
Tests: dp_replay, dp_monitor, dp_bus_down, trace, trace_bus_back, trace_republish, options.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

BUILD, SRC = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bus  # noqa: E402
from bus import Failure, NatsServer, check, free_port, wait_until  # noqa: E402

GEN = os.path.join(BUILD, "bench", "gen", "insert-gen")
DP = os.path.join(BUILD, "dataplane", "tools", "insert-dp")
TRACER = os.path.join(BUILD, "hosttrace", "insert-trace")
NATS_DUMP = os.path.join(BUILD, "tests", "nats", "nats_dump")


def run(args, expect=0, **kwargs):
    p = subprocess.run(args, capture_output=True, text=True, timeout=300, **kwargs)
    check(p.returncode == expect, f"{' '.join(args)}: exit {p.returncode}, want {expect}: "
          f"{p.stderr.strip()[-3000:]}")
    return p


def lines_of(path):
    with open(path) as f:
        return f.readlines()


def schema():
    """The records' schema version, as insert-dp --version says it (Insert-Schema)."""
    return run([DP, "--version"]).stdout.splitlines()[1].split()[2]


def totals(stderr):
    """The publisher's last line: acknowledged records and batches, republished,
    duplicates, dropped, connections."""
    m = re.search(r"(\d+) records in (\d+) batches acknowledged by the bus \((\d+) published "
                  r"again, (\d+) of them duplicates the stream had\), (\d+) dropped, (\d+) "
                  r"connection", stderr)
    check(m, f"no totals line in: {stderr[-2000:]}")
    keys = ("records", "batches", "republished", "duplicates", "dropped", "connects")
    return dict(zip(keys, map(int, m.groups())))


def copies(lines, n, hosts=None):
    """Partition records: each record once per partition it goes to."""
    return sum(len(bus.partitions_of(json.loads(line), n, hosts)) for line in lines)


def make_capture(tmp):
    """mixed_ops: 8 hosts, 10.0.0.1-8 (with 8 partitions, one each)."""
    pcap = os.path.join(tmp, "mixed_ops.pcap")
    run([GEN, "--scenario", "mixed_ops", "--seed", "5", "--out", pcap, "--truth",
         os.path.join(tmp, "truth.json"), "--quiet"])
    return pcap


def server(tmp, name="nats"):
    return NatsServer(free_port(), os.path.join(tmp, name + "-store"),
                      os.path.join(tmp, name + ".log"))


# ---- insert-dp -----------------------------------------------------------------------------

def test_dp_replay(tmp):
    """insert-dp replay of an insert-gen scenario to the bus: the stream created, every
    record where the rule says; a hosts file and another prefix and partition count; a
    producer whose partition count differs from the stream's is refused."""
    pcap = make_capture(tmp)
    srv = server(tmp).start()
    try:
        out = os.path.join(tmp, "dp.jsonl")
        p = run([DP, "replay", pcap, "--quiet", "--records", out, "--nats", srv.url])
        check("publishing to stream insert (created, subjects insert.part.0-7, file storage, "
              "1 replica)" in p.stderr, f"no stream line: {p.stderr}")
        lines = lines_of(out)
        t = totals(p.stderr)
        check(t["dropped"] == 0 and t["records"] == copies(lines, 8),
              f"totals {t}, {copies(lines, 8)} partition records written")
        messages = bus.dump(NATS_DUMP, srv.url, "insert")
        per_part, producer = bus.check_stream(messages, lines, 8, schema=schema())
        check(len(messages) == t["batches"], f"{len(messages)} messages, {t['batches']} acked")
        check(producer.startswith("insert-dp."), f"producer {producer}")
        # 8 hosts on 8 partitions: each has its host's data and the summary.
        check(sorted(per_part) == list(range(8)) and min(per_part.values()) > 1,
              f"records per partition {per_part}")
        for m in messages:
            check(m["data"].count('"type":"summary"') <= 1, "a summary twice in a message")
        info = bus.stream_info(NATS_DUMP, srv.url, "insert")
        check(info["subjects"] == ["insert.part.*"] and info["storage"] == "file" and
              info["replicas"] == 1 and info["duplicates_ns"] == 120_000_000_000 and
              info["description"].startswith("INSERT records by host: 8 partitions"),
              f"stream {info}")

        # Multi-homed hosts through a hosts file, another prefix and partition count.
        hosts = os.path.join(tmp, "hosts")
        with open(hosts, "w") as f:
            f.write("# primary, then the extra addresses\n10.0.0.1 10.0.0.2\n"
                    "10.0.0.3   10.0.0.4 10.0.0.5  # three addresses, one host\n")
        out2 = os.path.join(tmp, "dp2.jsonl")
        p = run([DP, "replay", pcap, "--quiet", "--records", out2, "--nats", srv.url,
                 "--nats-subject", "multi", "--nats-partitions", "5", "--nats-hosts", hosts])
        primary = bus.load_hosts(hosts)
        per_part, _ = bus.check_stream(bus.dump(NATS_DUMP, srv.url, "multi"), lines_of(out2), 5,
                                       prefix="multi", hosts=primary)
        # The rule without the file would put 10.0.0.2's records elsewhere: the file counted.
        check(bus.partition_of("10.0.0.2", 5, {}) != bus.partition_of("10.0.0.1", 5, {}),
              "the hosts file test needs 10.0.0.1 and .2 apart without it")
        check(totals(p.stderr)["dropped"] == 0, p.stderr)

        # The stream was made for 8 partitions: a producer with 4 is refused, says so, and
        # drops (counted) rather than publishing to the wrong partitions.
        before = bus.stream_info(NATS_DUMP, srv.url, "insert")["msgs"]
        p = run([DP, "replay", pcap, "--quiet", "--nats", srv.url, "--nats-partitions", "4"])
        check("refused: it was made for 8 partitions, this producer has --nats-partitions 4"
              in p.stderr, f"no refusal: {p.stderr}")
        t = totals(p.stderr)
        check(t["records"] == 0 and t["dropped"] == copies(lines, 4), f"refused run: {t}")
        check(bus.stream_info(NATS_DUMP, srv.url, "insert")["msgs"] == before,
              "the refused producer published")
        print(f"dp_replay: {len(lines)} records, {len(messages)} messages, per partition "
              f"{per_part}")
    finally:
        srv.stop()


def test_dp_monitor(tmp):
    """insert-dp monitor (the live path: the exporter's periodic flush seals the batches
    that waited 100 ms) over an insert-gen capture played by DPDK's pcap device."""
    pcap = make_capture(tmp)
    srv = server(tmp).start()
    try:
        out = os.path.join(tmp, "monitor.jsonl")
        p = run([DP, "monitor", "--vdev", f"net_pcap0,rx_pcap={pcap}", "--duration", "2",
                 "--max-endpoints", "65536", "--quiet", "--records", out, "--nats", srv.url])
        lines = lines_of(out)
        check(sum('"type":"msg"' in l for l in lines) > 1000, f"{len(lines)} records")
        t = totals(p.stderr)
        check(t["dropped"] == 0 and t["records"] == copies(lines, 8), f"totals {t}")
        per_part, producer = bus.check_stream(bus.dump(NATS_DUMP, srv.url, "insert"), lines, 8,
                                              schema=schema())
        check(sorted(per_part) == list(range(8)), f"records per partition {per_part}")
        print(f"dp_monitor: {len(lines)} records in {t['batches']} batches, per partition "
              f"{per_part}")
    finally:
        srv.stop()


def test_dp_bus_down(tmp):
    """No bus at all: the replay says so once, writes its file as without --nats, counts
    every partition record as dropped and exits 0."""
    pcap = make_capture(tmp)
    port = free_port()
    plain = os.path.join(tmp, "plain.jsonl")
    run([DP, "replay", pcap, "--quiet", "--records", plain])
    out = os.path.join(tmp, "dp.jsonl")
    p = run([DP, "replay", pcap, "--quiet", "--records", out, "--nats",
             f"nats://127.0.0.1:{port}"])
    check(p.stderr.count("cannot reach the bus") == 1, f"stderr: {p.stderr}")
    check("keeping up to 67108864 bytes of records meanwhile (the other outputs go on)"
          in p.stderr, p.stderr)
    drop = lambda ls: [l for l in ls if '"type":"summary"' not in l]
    a, b = lines_of(plain), lines_of(out)
    check(drop(a) == drop(b) and len(a) == len(b), "the file differs from a run without --nats")
    t = totals(p.stderr)
    check(t["records"] + t["dropped"] >= copies(b, 8) and t["dropped"] == copies(b, 8) and
          t["batches"] == 0 and t["connects"] == 0, f"totals {t}, want {copies(b, 8)} dropped")
    check("records not delivered at the end (the bus was away)" in p.stderr, p.stderr)
    print(f"dp_bus_down: {len(b)} records written, {t['dropped']} partition records dropped")


# ---- insert-trace --------------------------------------------------------------------------

def tracer_helpers():
    """tests/hosttrace/trace_test.py's tracer, workload and softverbs (the tracer's tests)."""
    os.environ.setdefault("INSERT_BUILD_ROOT", BUILD)
    sys.path.insert(0, os.path.join(SRC, "tests", "hosttrace"))
    import trace_test
    return trace_test


def start_workload(tt, tracer):
    w = tt.Workload(["run", "--ops", "32", "--sync"], env=tt.softverbs_env())
    w.wait_phase("setup")
    tt.datapath_attached(tracer, w.pid)
    return w


def check_trace_stream(tt, tracer, url, w, stderr):
    try:
        return check_trace_records(tt, tracer, url, w, stderr)
    except Failure as e:
        raise Failure(f"{e}\ninsert-trace's stderr:\n{stderr}")


def check_trace_records(tt, tracer, url, w, stderr):
    lines = lines_of(tracer.path)
    per_part, producer = bus.check_stream(bus.dump(NATS_DUMP, url, "insert"), lines, 8,
                                          schema=schema())
    check(producer.startswith("insert-trace.trace-test-host."), f"producer {producer}")
    records = [json.loads(l) for l in lines]
    data = [r for r in records if r.get("verb") in bus.DATAPATH_VERBS and r["pid"] == w.pid]
    ips = {r["ip"] for r in data}
    # softverbs' two addresses: their data paths in two partitions (6 and 3 of 8).
    check(ips == {"127.77.0.1", "127.77.0.2"}, f"data-path addresses {ips}")
    check(len({bus.partition_of(ip, 8, {}) for ip in ips}) == 2, "one partition for both")
    check(len(per_part) == 8, f"partitions {per_part}: the control plane goes to all")
    t = totals(stderr)
    check(t["dropped"] == 0 and t["records"] == copies(lines, 8), f"totals {t}")
    return lines, per_part, t


def test_trace(tmp):
    """insert-trace over a softverbs workload to the bus as well as its file."""
    tt = tracer_helpers()
    srv = server(tmp).start()
    try:
        tracer = tt.Tracer(tmp, "-l", tt.SOFTVERBS_LIB, "--scan-ms", "0", "--nats", srv.url)
        wait_until(lambda: "publishing to stream insert (created" in tracer.stderr(),
                   "the stream line")
        w = start_workload(tt, tracer)
        w.release()
        w.wait_phase("mr2")
        w.release()
        w.finish()
        tracer.wait_record(lambda r: r.get("type") == "process_exit" and r["pid"] == w.pid,
                           "process_exit")
        tracer.stop()
        lines, per_part, t = check_trace_stream(tt, tracer, srv.url, w, tracer.stderr())
        tt.compare_with_truth([json.loads(l) for l in lines], w.pid, w.truth)
        print(f"trace: {len(lines)} records, per partition {per_part}, {t['batches']} batches")
    finally:
        srv.stop()
        kill_spawned(tt)


def test_trace_bus_back(tmp):
    """The tracer before the bus, across the bus's restart: it says it cannot reach it
    (once), that it connected, that it lost it and that it is back; what it wrote meanwhile
    waited and reached the stream, every record once (the store kept across the restart)."""
    tt = tracer_helpers()
    srv = server(tmp)
    try:
        tracer = tt.Tracer(tmp, "-l", tt.SOFTVERBS_LIB, "--scan-ms", "0", "--nats", srv.url)
        wait_until(lambda: "cannot reach the bus" in tracer.stderr(), "the unreachable line")
        w = start_workload(tt, tracer)
        srv.start()
        wait_until(lambda: "connected to the bus after" in tracer.stderr(), "the connected line")
        wait_until(lambda: "publishing to stream insert (created" in tracer.stderr(),
                   "the stream line")
        w.release()
        w.wait_phase("mr2")
        srv.stop()
        wait_until(lambda: "lost the bus" in tracer.stderr(), "the lost line")
        w.release()
        w.finish()
        tracer.wait_record(lambda r: r.get("type") == "process_exit" and r["pid"] == w.pid,
                           "process_exit")
        srv.start()
        wait_until(lambda: "back on the bus after" in tracer.stderr(), "the back line")
        # Publishing resumes: everything written so far reaches the stream while it runs.
        written = lines_of(tracer.path)
        want = copies(written, 8)
        wait_until(lambda: sum(int(m["headers"]["Insert-Records"])
                               for m in bus.dump(NATS_DUMP, srv.url, "insert")) >= want,
                   f"the stream to hold the {want} partition records written so far")
        tracer.stop()
        err = tracer.stderr()
        check(err.count("cannot reach the bus") == 1 and err.count("lost the bus") == 1, err)
        lines, per_part, t = check_trace_stream(tt, tracer, srv.url, w, err)
        check(t["connects"] == 2, f"totals {t}")
        print(f"trace_bus_back: {len(lines)} records, per partition {per_part}; {t}")
    finally:
        srv.stop()
        kill_spawned(tt)


def test_trace_republish(tmp):
    """A bus that stops answering (SIGSTOP) past the acknowledgement wait: the batches are
    published again with the same message ids, and once it answers the stream has each
    record once - the duplicates it was sent acknowledged as such."""
    tt = tracer_helpers()
    srv = server(tmp).start()
    try:
        tracer = tt.Tracer(tmp, "-l", tt.SOFTVERBS_LIB, "--scan-ms", "0", "--nats", srv.url)
        wait_until(lambda: "publishing to stream insert" in tracer.stderr(), "the stream line")
        w = start_workload(tt, tracer)
        srv.pause()
        w.release()
        w.wait_phase("mr2")
        w.release()
        w.finish()
        wait_until(lambda: "not acknowledged within 2 s: publishing it again" in tracer.stderr(),
                   "the republishing line")
        srv.resume()
        tracer.wait_record(lambda r: r.get("type") == "process_exit" and r["pid"] == w.pid,
                           "process_exit")
        tracer.stop()
        lines, per_part, t = check_trace_stream(tt, tracer, srv.url, w, tracer.stderr())
        check(t["republished"] >= 1 and t["duplicates"] >= 1, f"totals {t}")
        print(f"trace_republish: {len(lines)} records once each; {t}")
    finally:
        srv.stop()
        kill_spawned(tt)


def kill_spawned(tt):
    for proc in tt.SPAWNED:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# ---- options -------------------------------------------------------------------------------

def test_options(tmp):
    """Bad --nats options: exit 2 and one line naming the option, for both producers."""
    pcap = make_capture(tmp)
    bad_hosts = os.path.join(tmp, "bad-hosts")
    with open(bad_hosts, "w") as f:
        f.write("10.0.0.1 10.0.0.2\n10.0.0.3 not-an-address\n")
    twice = os.path.join(tmp, "twice")
    with open(twice, "w") as f:
        f.write("10.0.0.1 10.0.0.2\n10.0.0.3 10.0.0.2\n")
    url = "nats://127.0.0.1:1"
    cases = [
        (["--nats-subject", "x"], "--nats-subject: needs --nats URL"),
        (["--nats-partitions", "4"], "--nats-partitions: needs --nats URL"),
        (["--nats", "http://127.0.0.1:4222"], "--nats http://127.0.0.1:4222: expected nats://"),
        (["--nats", url + ",bus:4222"], "--nats bus:4222: expected nats://HOST:PORT"),
        (["--nats", url, "--nats-subject", "a.b"], "--nats-subject a.b: one subject token"),
        (["--nats", url, "--nats-hosts", os.path.join(tmp, "none")],
         "--nats-hosts " + os.path.join(tmp, "none") + ": No such file or directory"),
        (["--nats", url, "--nats-hosts", bad_hosts], ":2: 'not-an-address' is not an IP address"),
        (["--nats", url, "--nats-hosts", twice], ":2: 10.0.0.2 is listed already (line 1)"),
        (["--nats", url, "--nats-partitions", "0"], "--nats-partitions"),
    ]
    for args, want in cases:
        programs = [[DP, "replay", pcap, "--quiet"], [TRACER, "-o", os.path.join(tmp, "t")]]
        for program in programs if os.path.exists(TRACER) else programs[:1]:
            p = run(program + args, expect=2)
            err = p.stderr.strip().splitlines()
            check(len(err) == 1 and want in err[0], f"{program[0]} {args}: {p.stderr!r}")
    print(f"options: {len(cases)} refusals, each by both producers")


TESTS = {
    "dp_replay": test_dp_replay,
    "dp_monitor": test_dp_monitor,
    "dp_bus_down": test_dp_bus_down,
    "trace": test_trace,
    "trace_bus_back": test_trace_bus_back,
    "trace_republish": test_trace_republish,
    "options": test_options,
}


def main():
    if len(sys.argv) != 4 or sys.argv[3] not in TESTS:
        print(f"usage: {sys.argv[0]} BUILD SRC {'|'.join(TESTS)}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="insert-nats-test-") as tmp:
        try:
            TESTS[sys.argv[3]](tmp)
        except Exception as e:  # bus.Failure, or trace_test's Failure in the tracer's tests
            if type(e).__name__ != "Failure":
                raise
            print(f"FAIL {sys.argv[3]}: {e}", file=sys.stderr)
            return 1
    print(f"PASS {sys.argv[3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

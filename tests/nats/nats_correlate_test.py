#!/usr/bin/env python3
"""insert-correlate over the bus (docs/scale-out.md "The consumers") against a real
nats-server that each test starts on a free loopback port: insert-gen's scenarios with host
traces published as a deployment publishes them - insert-dp replay --nats, and the host
traces by nats_publish, one producer per host as one tracer per host would be - then
correlator instances over 8 partitions, 0-3 and 4-7, whose records together must be one
process's: `insert-correlate` batch over the same files (compare_e2e.py's keys and fields;
wall-clock fields and order aside), except the two fields docs/scale-out.md names, which
need the other instance's partitions: checked to differ only there.

    nats_correlate_test.py BUILD_ROOT SOURCE_ROOT TEST_NAME
Tests: union, bus_late, refusals.
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import defaultdict

BUILD, SRC = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
import bus  # noqa: E402
import compare_e2e  # noqa: E402
from bus import Failure, NatsServer, check, free_port, wait_until  # noqa: E402

GEN = os.path.join(BUILD, "bench", "gen", "insert-gen")
DP = os.path.join(BUILD, "dataplane", "tools", "insert-dp")
CORRELATE = os.path.join(BUILD, "correlator", "insert-correlate")
NATS_DUMP = os.path.join(BUILD, "tests", "nats", "nats_dump")
NATS_PUBLISH = os.path.join(BUILD, "tests", "nats", "nats_publish")
N = 8
# Three instances: two that may own partitions 0-3 and 4-7 only, and one that may own any -
# the leases share them out (3, 3, 2), whoever starts first.
INSTANCES = [list(range(0, 4)), list(range(4, 8)), list(range(N))]
# A live run decides in windows; with every record on the bus before it starts, a --max-delay
# longer than a scenario's data keeps its decisions for the end, where a batch run makes them
# (the live correlator's own tests cover the windows).
LIVE = ["--quiet", "--ttl", "3600", "--max-delay", "600"]


def run(args, expect=0, **kwargs):
    p = subprocess.run(args, capture_output=True, text=True, timeout=300, **kwargs)
    check(p.returncode == expect, f"{' '.join(args)}: exit {p.returncode}, want {expect}: "
          f"{p.stderr.strip()[-3000:]}")
    return p


def server(tmp, name="nats"):
    return NatsServer(free_port(), os.path.join(tmp, name + "-store"),
                      os.path.join(tmp, name + ".log"))


def scenarios():
    names = run([GEN, "--list-scenarios"]).stdout.split()
    specs = os.path.join(SRC, "bench", "gen", "scenarios")
    return names + sorted(os.path.join(specs, f) for f in os.listdir(specs) if f.endswith(".json"))


def make_scenario(tmp, scenario, seed=41):
    """insert-gen's capture and host traces (e2e_truth_test.sh's way)."""
    name = os.path.basename(scenario).removesuffix(".json")
    base = os.path.join(tmp, name)
    extra = ["--qps", "2000", "--packets", "20000"] if scenario == "large" else []
    run([GEN, "--scenario", scenario, "--seed", str(seed), *extra, "--out", base + ".pcap",
         "--truth", base + ".truth.json", "--host-traces", base + ".hosts.jsonl",
         "--e2e-truth", base + ".e2e.jsonl", "--quiet"])
    return name, base


def publish(url, base, prefix):
    """The capture by insert-dp replay --nats (its records file kept: the batch run's input),
    the host traces by nats_publish, one producer per host."""
    p = run([DP, "replay", base + ".pcap", "--quiet", "--records", base + ".dp.jsonl",
             "--nats", url, "--nats-subject", prefix])
    check(" 0 dropped" in p.stderr, f"insert-dp replay: {p.stderr}")
    by_host = defaultdict(list)
    with open(base + ".hosts.jsonl") as f:
        for line in f:
            by_host[json.loads(line).get("host", "?")].append(line)
    for host, lines in sorted(by_host.items()):
        path = f"{base}.host-{host}.jsonl"
        with open(path, "w") as f:
            f.writelines(lines)
        run([NATS_PUBLISH, url, path, "--producer", f"insert-trace.{host}.1.1",
             "--subject", prefix])
    return len(by_host)


def consumers_done(url, prefix):
    """Every partition's consumer has delivered everything and has it acknowledged."""
    for k in range(N):
        p = subprocess.run([NATS_DUMP, url, prefix, "--consumer", f"{prefix}-correlate-p{k}"],
                           capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            return False
        c = json.loads(p.stdout)
        if c["num_pending"] or c["num_ack_pending"]:
            return False
    return True


class Instance:
    """An instance that may own `partitions` (its share of them, through leases) and, when
    stopped, decides what it holds as at the end of the input (--on-stop decide: the test's
    end is the input's)."""

    def __init__(self, tmp, name, url, prefix, partitions, extra=(), live=LIVE):
        self.name = f"{name}.p{partitions[0]}-{partitions[-1]}"
        self.out = os.path.join(tmp, self.name + ".jsonl")
        self.err_path = self.out + ".err"
        self.err_file = open(self.err_path, "w")
        self.proc = subprocess.Popen(
            [CORRELATE, "--nats", url, "--nats-subject", prefix, "--partitions",
             f"{partitions[0]}-{partitions[-1]}", "--records", self.out, "--instance",
             self.name, "--on-stop", "decide", *live, *extra],
            stdout=subprocess.DEVNULL, stderr=self.err_file)

    def stderr(self):
        with open(self.err_path) as f:
            return f.read()

    def terminate(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)

    def stop(self):
        self.terminate()
        rc = self.proc.wait(60)
        self.err_file.close()
        check(rc == 0, f"insert-correlate exit {rc}: {self.stderr()[-2000:]}")
        return self.stderr()


def bus_metric(port, name):
    """One sample of an instance's /metrics (0 when it is not there yet)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return 0


def partitions_said(err, what):
    """The partitions of the lines "took partition K ..." or "giving partition K back"."""
    return [int(l.split(what)[1].split()[0]) for l in err.splitlines() if what in l]


def output_stream(url, prefix, path):
    """The records on the output stream PREFIX-out, every partition's, into `path`; the
    number of messages."""
    msgs = bus.dump(NATS_DUMP, url, prefix + "-out")
    with open(path, "w") as f:
        for m in msgs:
            f.write(m["data"])
    return len(msgs)


def union_of(instances, path):
    """The instances' --records files together, without their summaries and cgroup names
    (each partition's join writes those of every host)."""
    with open(path, "w") as f:
        for i in instances:
            with open(i.out) as part:
                f.writelines(l for l in part if '"type":"summary"' not in l and
                             '"type":"cgroup"' not in l)


def partition_of(ip):
    """Each partition is a join of its own (docs/scale-out.md "Leases and takeover"): what
    needs another partition's records differs, whichever instance holds the two."""
    return bus.partition_of(ip, N, {})


def load(path):
    try:
        return compare_e2e.load(path)[0]
    except SystemExit as e:  # a record written twice (by both instances)
        raise Failure(str(e))


def compare_union(batch_path, union_path, name):
    """The union against the batch run, record by record; what may differ, and only where
    docs/scale-out.md "Not done yet" says: an e2e record's t_recv_poll_ns when its responder's
    partition is the other instance's (null in the union), an app's ecn_ce_caused (fewer)
    when a QP the dataplane did not pair sends to a host of the other instance."""
    batch, union = load(batch_path), load(union_path)
    out, crossing = [], defaultdict(int)
    for kind in compare_e2e.KEYS:
        b, u = batch[kind], union[kind]
        for key in sorted(set(b) | set(u), key=str):
            if key not in u:
                out.append(f"{kind} {key}: only in the batch run")
                continue
            if key not in b:
                out.append(f"{kind} {key}: only in the instances' records")
                continue
            br, ur = dict(b[key]), dict(u[key])
            if kind == "e2e" and br.get("t_recv_poll_ns") != ur.get("t_recv_poll_ns"):
                cross = partition_of(br["src_ip"]) != partition_of(br["dst_ip"])
                if cross and ur.get("t_recv_poll_ns") is None:
                    crossing["e2e.t_recv_poll_ns"] += 1
                    br.pop("t_recv_poll_ns")
            if kind == "app" and br.get("ecn_ce_caused") != ur.get("ecn_ce_caused"):
                if ur.get("ecn_ce_caused", 0) < br.get("ecn_ce_caused", 0) and \
                        unpaired_peer_elsewhere(batch, br):
                    crossing["app.ecn_ce_caused"] += 1
                    br.pop("ecn_ce_caused")
            compare_e2e.diff(f"{kind} {key}", br, ur, out)
    if out:
        raise Failure(f"{name}: {len(out)} differences between the instances and the batch "
                      "run:\n" + "\n".join(out[:30]))
    return {k: len(v) for k, v in batch.items()}, dict(crossing)


def unpaired_peer_elsewhere(batch, app):
    """A peer of the app's QPs on the other instance's hosts is a QP the dataplane did not
    pair (a `pair` record with dp_peer_ip null): its `qp` records, whose ECN-CE counts the
    app caused, go to its own partition only."""
    for (ip, _qpn), p in batch["pair"].items():
        if p.get("peer_ip") == app["ip"] and p.get("dp_peer_ip") is None and \
                partition_of(ip) != partition_of(app["ip"]):
            return True
    return False


def correlate_scenario(tmp, srv, scenario, prefix):
    name, base = make_scenario(tmp, scenario)
    hosts = publish(srv.url, base, prefix)
    batch = base + ".batch.jsonl"
    run([CORRELATE, "--threads", "1", "--quiet", "--records", batch, base + ".dp.jsonl",
         base + ".hosts.jsonl"])
    instances = [Instance(tmp, name, srv.url, prefix, parts) for parts in INSTANCES]
    try:
        wait_until(lambda: consumers_done(srv.url, prefix), f"{name}: the partitions consumed",
                   120)
    finally:
        for i in instances:  # together: none takes over what another gives up stopping
            i.terminate()
        errs = [i.stop() for i in instances]
    taken = set()
    for parts, err in zip(INSTANCES, errs):
        took = partitions_said(err, "took partition ")
        check(set(took) <= set(parts), f"partitions taken {took}, may own {parts}: {err}")
        taken |= set(took)
        check("0 refused, 0 malformed, 0 delivered again" in err, err)
        check("deciding everything held" in err, err)
    check(taken == set(range(N)), f"partitions taken {sorted(taken)}")
    union = base + ".union.jsonl"
    union_of(instances, union)
    counts, crossing = compare_union(batch, union, name)
    # The output stream holds the same records, each once.
    out = base + ".out.jsonl"
    output_stream(srv.url, prefix, out)
    check(compare_union(batch, out, name) == (counts, crossing), f"{name}: the output stream")
    return name, hosts, counts, crossing


def test_union(tmp):
    """Every insert-gen scenario with host traces: the instances' records together are the
    batch run's."""
    srv = server(tmp).start()
    kinds, crossing_all = defaultdict(int), defaultdict(int)
    try:
        for n, scenario in enumerate(scenarios()):
            name, hosts, counts, crossing = correlate_scenario(tmp, srv, scenario, f"s{n}")
            for k, v in counts.items():
                kinds[k] += v
            for k, v in crossing.items():
                crossing_all[k] += v
            print(f"{name}: {hosts} tracers; same records {counts}; across instances "
                  f"{crossing}")
    finally:
        srv.stop()
    # The comparisons covered every kind of record the instances decide apart.
    check(all(kinds[k] > 0 for k in ("e2e", "app", "clock", "pair", "alert", "congestion")),
          f"records compared {dict(kinds)}")
    print(f"union: records compared {dict(kinds)}; the documented cross-instance fields "
          f"{dict(crossing_all)}")


def test_bus_late(tmp):
    """The instances started before the bus: each says once that it cannot reach it and
    waits; the bus started, then the producers; each says it connected, waits for the stream
    the first producer creates, and consumes - the records as a batch run's."""
    port = free_port()
    url = f"nats://127.0.0.1:{port}"
    name, base = make_scenario(tmp, "mixed_ops")
    instances = [Instance(tmp, name, url, "insert", parts) for parts in INSTANCES]
    srv = NatsServer(port, os.path.join(tmp, "store"), os.path.join(tmp, "nats.log"))
    try:
        for i in instances:
            wait_until(lambda: "cannot reach the bus" in i.stderr(), "the unreachable line")
        srv.start()
        for i in instances:
            wait_until(lambda: "connected to the bus after" in i.stderr(), "the connected line")
            wait_until(lambda: "stream insert: not there yet" in i.stderr(), "the stream line")
        publish(url, base, "insert")
        wait_until(lambda: consumers_done(url, "insert"), "the partitions consumed", 120)
    finally:
        for i in instances:  # together: none takes over what another gives up stopping
            i.terminate()
        errs = [i.stop() for i in instances]
        srv.stop()
    for err in errs:
        # Once by the consumers, once by the output stream's publisher (its own label).
        check(err.count(f"--nats {url}: cannot reach the bus") == 1 and
              err.count(f"--nats {url} (output stream insert-out): cannot reach the bus") == 1
              and err.count("not there yet") == 1, err)
    union = base + ".union.jsonl"
    union_of(instances, union)
    batch = base + ".batch.jsonl"
    run([CORRELATE, "--threads", "1", "--quiet", "--records", batch, base + ".dp.jsonl",
         base + ".hosts.jsonl"])
    counts, crossing = compare_union(batch, union, name)
    print(f"bus_late: same records {counts}; across instances {crossing}")


def check_options(tmp):
    """Bad --nats options: exit 2 and one line naming the option."""
    url = "nats://127.0.0.1:1"
    cases = [
        (["--partitions", "0-3", "--listen", os.path.join(tmp, "s")],
         "--partitions: needs --nats URL"),
        (["--nats-subject", "x", "-"], "--nats-subject: needs --nats URL"),
        (["--nats", url, "-"], "--nats: the bus's partitions are the inputs"),
        (["--nats", "http://127.0.0.1:4222"], "--nats http://127.0.0.1:4222: expected nats://"),
        (["--nats", url, "--nats-subject", "a.b"], "--nats-subject a.b: one subject token"),
        (["--nats", url, "--partitions", "2-9"],
         "--partitions 2-9: partition 9 is not below --nats-partitions 8"),
        (["--nats", url, "--partitions", "3-1"], "--partitions 3-1: expected partitions as"),
        (["--nats", url, "--partitions", "x"], "--partitions x: expected partitions as"),
        (["--nats", url, "--nats-partitions", "0"], "--nats-partitions 0: from 1 to 1024"),
        (["--nats", url, "--nats-hosts", os.path.join(tmp, "none")],
         "--nats-hosts " + os.path.join(tmp, "none") + ": No such file or directory"),
    ]
    for args, want in cases:
        p = run([CORRELATE, "--quiet", *args], expect=2)
        err = p.stderr.strip().splitlines()
        check(len(err) == 1 and want in err[0], f"{args}: {p.stderr!r}")
    return len(cases)


def test_refusals(tmp):
    """Bad options refused; a correlator with another partition count than the stream's is
    refused (one line, no consumer made); messages with another Insert-Partitions, on
    another partition's subject, or malformed are refused or skipped - one line each,
    counted - and the partition goes on: the records after them are joined."""
    options = check_options(tmp)
    srv = server(tmp).start()
    try:
        name, base = make_scenario(tmp, "clean_write")
        # The stream made for 8 partitions (by the first producer).
        bad = [(["Insert-Partitions=4", "Insert-Partition=1"], "insert.part.1"),
               (["Insert-Partitions=8", "Insert-Partition=2"], "insert.part.1"),
               ([], "insert.part.1"),
               (["Insert-Partitions=8", "Insert-Partition=1", "Insert-Records=3"],
                "insert.part.1")]
        run([DP, "replay", base + ".pcap", "--quiet", "--records", base + ".dp.jsonl", "--nats",
             srv.url])
        wrong = subprocess.Popen([CORRELATE, "--nats", srv.url, "--nats-partitions", "4",
                                  "--duration", "3", "--quiet"], stderr=subprocess.PIPE, text=True)
        for headers, subject in bad:
            args = [NATS_PUBLISH, srv.url, "--raw", subject, "--data", '{"type":"x"}\n']
            for h in headers + ["Insert-Producer=rogue.1", "Insert-Seq=1"] * bool(headers):
                args += ["--header", h]
            run(args)
        _, err = wrong.communicate(timeout=30)
        check(wrong.returncode == 0, err)
        want = ("stream insert: refused: it was made for 8 partitions, this correlator has "
                "--nats-partitions 4; nothing is consumed")
        check(err.count(want) == 1, f"the refusal once: {err}")
        check(subprocess.run([NATS_DUMP, srv.url, "insert", "--consumer", "insert-correlate-p0"],
                             capture_output=True).returncode == 3, "a refused run made a consumer")
        publish(srv.url, base, "insert")  # after the bad messages: the partitions go on
        inst = Instance(tmp, name, srv.url, "insert", list(range(N)))
        try:
            wait_until(lambda: consumers_done(srv.url, "insert"), "the partitions consumed", 60)
        finally:
            err = inst.stop()
        lines = err.splitlines()
        refused = [l for l in lines if "refused a message of rogue.1" in l]
        check(len(refused) == 2 and
              "Insert-Partitions 4, this correlator has --nats-partitions 8" in refused[0] and
              "Insert-Partition 2 on the subject of partition 1" in refused[1], err)
        malformed = [l for l in lines if "skipped a malformed message on insert.part.1" in l]
        check(len(malformed) == 2 and "no Insert-Partitions header" in malformed[0] and
              "Insert-Records 3, but 1 line" in malformed[1], err)
        check("2 refused, 2 malformed, 0 delivered again" in err, err)
        with open(inst.out) as f:
            e2e = sum('"type":"e2e"' in l for l in f)
        batch = base + ".batch.jsonl"
        run([CORRELATE, "--quiet", "--records", batch, base + ".dp.jsonl", base + ".hosts.jsonl"])
        with open(batch) as f:
            want_e2e = sum('"type":"e2e"' in l for l in f)
        check(e2e == want_e2e and e2e > 0, f"{e2e} e2e records, the batch run {want_e2e}")
        print(f"refusals: {options} bad options; a run with 4 partitions refused; 2 messages "
              f"refused, 2 skipped; then {e2e} e2e records as the batch run")
    finally:
        srv.stop()


def test_takeover(tmp):
    """Three instances over 8 partitions deciding as they go (short --max-delay and --ttl);
    one killed (SIGKILL) once records are on the output stream: its leases lapse, the two
    others take its partitions, rebuild their joins from the partitions' first messages and
    recognise what it had published. The output stream then holds every record of a batch
    run exactly once - none lost, none twice - and the instances say how many they
    recognised."""
    srv = server(tmp).start()
    name, base = make_scenario(tmp, "large")
    live = ["--quiet", "--max-delay", "0.5", "--ttl", "1", "--interval", "0.5",
            "--lease-ttl", "3"]
    try:
        publish(srv.url, base, "insert")
        batch = base + ".batch.jsonl"
        run([CORRELATE, "--threads", "1", "--quiet", "--records", batch, base + ".dp.jsonl",
             base + ".hosts.jsonl"])
        ports = [free_port() for _ in range(3)]
        instances = [Instance(tmp, f"i{n}", srv.url, "insert", list(range(N)), live=live,
                              extra=["--http", f"127.0.0.1:{ports[n]}"]) for n in range(3)]
        out = base + ".out.jsonl"

        def published():
            ok = subprocess.run([NATS_DUMP, srv.url, "insert-out", "--info"],
                                capture_output=True).returncode == 0
            return ok and output_stream(srv.url, "insert", out) >= 30
        try:
            wait_until(published, "records on the output stream", 120)
            victim = instances[0]
            victim.proc.kill()
            victim.proc.wait()
            killed_at = time.monotonic()
            took = re.compile(r"took partition (\d+) \((\d+) records of it published before")

            # Every partition taken once by the survivors, besides what the victim took.
            wait_until(lambda: sum(len(took.findall(i.stderr())) for i in instances[1:]) ==
                       N, "the victim's partitions taken over", 60)
            after = time.monotonic() - killed_at
            wait_until(lambda: all(len(took.findall(i.stderr())) <=
                                   i.stderr().count("from its first message")
                                   for i in instances[1:]),
                       "the partitions taken over read from their first message", 60)
            wait_until(lambda: consumers_done(srv.url, "insert"), "the partitions consumed", 120)
            # /metrics of the survivors: every partition held by one, what was recognised.
            wait_until(lambda: sum(bus_metric(p, "insert_correlate_bus_partitions_held")
                                   for p in ports[1:]) == N, "/metrics: 8 partitions held", 10)
            # Every record published before is decided again and recognised, in a window.
            before = sum(int(n) for i in instances[1:] for _, n in took.findall(i.stderr()))
            wait_until(lambda: sum(bus_metric(p, 'insert_correlate_bus_output_records_total'
                                                 '{outcome="recognised"}') for p in ports[1:])
                       == before, f"/metrics: {before} records recognised", 20)
            scraped = {p: (bus_metric(p, 'insert_correlate_bus_partition_leases_total'
                                         '{event="taken"}'),
                           bus_metric(p, 'insert_correlate_bus_output_records_total'
                                         '{outcome="recognised"}')) for p in ports[1:]}
        finally:
            for i in instances[1:]:
                i.terminate()
            errs = [i.stop() for i in instances[1:]]
        recognised = [int(n) for err in errs for _, n in took.findall(err)]
        for port, err in zip(ports[1:], errs):
            taken, seen = scraped[port]
            check(taken == len(took.findall(err)) and seen == sum(
                int(n) for _, n in took.findall(err)), f"/metrics {scraped[port]}: {err}")
        check(any(recognised), f"no partition had records published before: {errs}")
        check(after <= 3 + 2 * 1.5, f"taken over after {after:.1f} s (lease TTL 3 s)")
        output_stream(srv.url, "insert", out)
        counts, crossing = compare_union(batch, out, name)
        print(f"takeover: taken over {after:.1f} s after the kill; {sum(recognised)} records "
              f"recognised as published before; the output stream as the batch run: {counts}; "
              f"across partitions {crossing}")
    finally:
        srv.stop()


TESTS = {"union": test_union, "bus_late": test_bus_late, "refusals": test_refusals,
         "takeover": test_takeover}


def main():
    if len(sys.argv) != 4 or sys.argv[3] not in TESTS:
        print(f"usage: {sys.argv[0]} BUILD SRC {'|'.join(TESTS)}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="insert-nats-correlate-") as tmp:
        try:
            TESTS[sys.argv[3]](tmp)
        except Failure as e:
            print(f"FAIL {sys.argv[3]}: {e}", file=sys.stderr)
            return 1
    print(f"PASS {sys.argv[3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""insert-correlate on a real run: unmodified perftest (ib_write_bw, ib_read_bw,
ib_send_bw) over softverbs between two network namespaces, traced by insert-trace and
observed by insert-dp inline in a third namespace on the path:

    A (10.79.0.1, clients):a0 - a1:[insert-dp inline]:b1 - b0:B (10.79.0.2, servers)

Asserts that every message each client posted is joined to its wire message, attributed to
the client's pid and comm with the server as peer, that the latency split adds up to the
time the application saw (post -> poll) exactly, that the host clock bounds hold the
shared clock, and that the servers' receive completions are matched to the SENDs.
Needs root (exit 77 otherwise)."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

SRC = os.environ.get("INSERT_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("INSERT_BUILD_ROOT", os.path.join(SRC, "build"))
NETNS = os.path.join(SRC, "scripts", "netns-inline.sh")
INSERT_DP = os.path.join(BUILD, "dataplane", "tools", "insert-dp")
TRACER = os.path.join(BUILD, "hosttrace", "insert-trace")
CORRELATE = os.path.join(BUILD, "correlator", "insert-correlate")
SOFTVERBS_DIR = os.path.join(BUILD, "hosttrace", "softverbs")
SOFTVERBS_LIB = os.path.join(SOFTVERBS_DIR, "libibverbs.so.1")
IP_A, IP_B = "10.79.0.1", "10.79.0.2"
ITERATIONS = 300
SIZE = 4096
DEADLINE_S = 60


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def wait_until(pred, what, deadline_s=DEADLINE_S):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise Failure(f"timed out waiting for {what}")


def read_jsonl(path):
    try:
        with open(path) as f:
            lines = f.read().split("\n")
    except FileNotFoundError:
        return []
    return [json.loads(l) for l in lines[:-1] if l]


class Topology:
    def __init__(self):
        self.name = f"ce{os.getpid() % 100000}"

    def __enter__(self):
        subprocess.run([NETNS, "down", self.name], capture_output=True)
        subprocess.run([NETNS, "up", self.name], check=True, timeout=30, capture_output=True)
        subprocess.run(["ip", "-n", f"{self.name}-a", "addr", "add", f"{IP_A}/24", "dev", "a0"], check=True)
        subprocess.run(["ip", "-n", f"{self.name}-b", "addr", "add", f"{IP_B}/24", "dev", "b0"], check=True)
        return self

    def __exit__(self, *exc):
        subprocess.run([NETNS, "down", self.name], capture_output=True)

    def cmd(self, role, *argv):
        return ["ip", "netns", "exec", f"{self.name}-{role}", *argv]

    def listening(self, role, port):
        out = subprocess.run(self.cmd(role, "ss", "-ltnH"), capture_output=True, text=True).stdout
        return f":{port} " in out


def softverbs_env():
    env = dict(os.environ)
    env.pop("SOFTVERBS_IPS", None)  # softverbs lists the namespace's own addresses
    env["LD_LIBRARY_PATH"] = SOFTVERBS_DIR
    return env


def log(text):
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def run_pair(topo, tool, port, tmp):
    """Server in B, client in A; returns (server pid, client pid)."""
    log(f"{tool}: server in B, client in A")
    args = [tool, "-F", "-n", str(ITERATIONS), "-s", str(SIZE), "-p", str(port)]
    logs = [open(os.path.join(tmp, f"{tool}.{r}.log"), "w") for r in ("server", "client")]
    server = subprocess.Popen(topo.cmd("b", *args), env=softverbs_env(), stdout=logs[0], stderr=subprocess.STDOUT)
    wait_until(lambda: topo.listening("b", port) or server.poll() is not None, f"{tool} server")
    client = subprocess.Popen(topo.cmd("a", *args, IP_B), env=softverbs_env(), stdout=logs[1],
                              stderr=subprocess.STDOUT)
    crc, src = client.wait(timeout=60), server.wait(timeout=60)
    for f in logs:
        f.close()
    if crc or src:
        texts = [open(f.name).read() for f in logs]
        raise Failure(f"{tool}: client {crc} server {src}\n" + "\n".join(texts))
    return server.pid, client.pid


def main():
    if os.geteuid() != 0:
        print("skipped: needs root (network namespaces, eBPF)")
        return 77
    tmp = tempfile.mkdtemp(prefix="perftest_e2e_")
    trace_path, dp_path, out_path = (os.path.join(tmp, n) for n in ("trace.jsonl", "dp.jsonl", "e2e.jsonl"))
    procs = {}  # pid -> (tool, role)
    with Topology() as topo:
        tracer = subprocess.Popen([TRACER, "-o", trace_path, "--host", "perfhost", "-l", SOFTVERBS_LIB,
                                   "--scan-ms", "0"], stdout=subprocess.DEVNULL,
                                  stderr=open(os.path.join(tmp, "trace.err"), "w"))
        dp = None
        try:
            wait_until(lambda: any(r.get("type") == "trace_start" for r in read_jsonl(trace_path))
                       or tracer.poll() is not None, "insert-trace to start")
            if tracer.poll() is not None:
                raise Failure("insert-trace exited: " + open(os.path.join(tmp, "trace.err")).read())
            dp_err = open(os.path.join(tmp, "dp.err"), "w")
            dp = subprocess.Popen(topo.cmd("mid", INSERT_DP, "inline", "--iface", "a1", "--iface", "b1",
                                           "--records", dp_path, "--no-view", "--interval", "1"),
                                  stdout=subprocess.DEVNULL, stderr=dp_err)
            wait_until(lambda: "running on" in open(dp_err.name).read() or dp.poll() is not None,
                       "insert-dp inline to start")
            check(dp.poll() is None, "insert-dp inline exited: " + open(dp_err.name).read())
            log("insert-trace and insert-dp inline running")
            for port, tool in enumerate(("ib_write_bw", "ib_read_bw", "ib_send_bw")):
                server, client = run_pair(topo, tool, 18700 + port, tmp)
                procs[server] = (tool, "server")
                procs[client] = (tool, "client")
            wait_until(lambda: {r["pid"] for r in read_jsonl(trace_path) if r.get("type") == "process_exit"}
                       >= set(procs), "process_exit of every perftest process")
        finally:
            tracer.send_signal(signal.SIGTERM)
            check(tracer.wait(timeout=30) == 0, "insert-trace exit status")
            if dp is not None:
                dp.send_signal(signal.SIGTERM)
                check(dp.wait(timeout=60) == 0, "insert-dp exit status: " + open(os.path.join(tmp, "dp.err")).read())

    r = subprocess.run([CORRELATE, dp_path, trace_path, "--records", out_path], capture_output=True, text=True,
                       timeout=120)
    check(r.returncode == 0, f"insert-correlate: {r.returncode} {r.stderr}")
    print(r.stdout)
    records = read_jsonl(out_path)
    e2e = [x for x in records if x["type"] == "e2e"]
    summary = next(x for x in records if x["type"] == "summary")
    clients = {pid: tool for pid, (tool, role) in procs.items() if role == "client"}
    servers = {tool: pid for pid, (tool, role) in procs.items() if role == "server"}
    op_of = {"ib_write_bw": "WRITE", "ib_read_bw": "READ", "ib_send_bw": "SEND"}

    # Every QP attributed to the right process: all of a client's messages, and only them.
    for pid, tool in clients.items():
        mine = [x for x in e2e if x["pid"] == pid]
        check(len(mine) == ITERATIONS, f"{tool} (pid {pid}): {len(mine)} e2e records, {ITERATIONS} posted")
        for x in mine:
            check(x["comm"] == tool and x["op"] == op_of[tool] and x["bytes"] == SIZE
                  and x["src_ip"] == IP_A and x["dst_ip"] == IP_B, f"{tool}: {x}")
            check(x["peer_pid"] == servers[tool] and x["peer_comm"] == tool, f"{tool} peer: {x}")
            # Unsignaled requests (perftest signals one in --cq-mod, 100) have no completion
            # of their own (SPEC 10 v1.3).
            check(x["host"] == "perfhost" and x["status"] == "ok" and
                  x["wc_status"] == ("SUCCESS" if x["signaled"] else None), f"{x}")
    check(len(e2e) == ITERATIONS * len(clients), f"{len(e2e)} e2e records")
    check(all(x["pid"] in clients for x in e2e), "an e2e record of a process that posted nothing")
    # The split adds up to what the application saw, exactly; an unsignaled request shows
    # only its host and network parts, and the poll that covered it.
    signaled = [x for x in e2e if x["signaled"]]
    check(0 < len(signaled) < len(e2e), f"{len(signaled)} of {len(e2e)} signaled")
    for x in e2e:
        parts = [x["host_ns"], x["net_ns"], x["completion_ns"], x["total_ns"]]
        check(x["net_ns"] > 0 and x["host_ns"] is not None, f"{x}")
        if not x["signaled"]:
            check(parts[2:] == [None, None] and x["t_poll_ns"] is None and
                  x["t_covered_ns"] is not None and x["t_covered_ns"] > x["t_ack_ns"],
                  f"unsignaled: {x}")
            continue
        check(None not in parts and x["t_covered_ns"] is None, f"a part is missing: {x}")
        check(parts[0] + parts[1] + parts[2] == parts[3], f"split {parts}")
        check(x["t_poll_ns"] - x["t_post_ns"] == x["total_ns"], f"total {x}")
        check(x["total_ns"] > 0, f"{x}")
    # One clock shared by the namespaces: the bounds hold an offset near zero.
    clocks = [x for x in records if x["type"] == "clock"]
    check(len(clocks) == 1 and clocks[0]["host"] == "perfhost" and clocks[0]["consistent"], f"{clocks}")
    check(clocks[0]["lo_ns"] <= clocks[0]["hi_ns"], f"{clocks}")
    # The servers' receive completions deliver every SEND.
    sends = [x for x in e2e if x["op"] == "SEND"]
    check(all(x["t_recv_poll_ns"] is not None and x["t_recv_poll_ns"] >= x["t_first_ns"] - 1_000_000
              for x in sends), "SENDs without their receive completion")
    check(summary["unmatched_wr"] == 0 and summary["wire_only"] == 0, f"summary {summary}")
    apps = [x for x in records if x["type"] == "app"]
    check(sorted(a["pid"] for a in apps) == sorted(clients), f"apps {apps}")
    for a in apps:
        check(a["msgs"][op_of[clients[a["pid"]]]] == ITERATIONS, f"app {a}")
    print(f"PASS: {len(e2e)} messages of 3 perftest clients joined; clock bounds "
          f"[{clocks[0]['lo_ns']}, {clocks[0]['hi_ns']}] ns")
    subprocess.run(["rm", "-rf", tmp])
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as e:
        print(f"FAIL: {e}")
        sys.exit(1)

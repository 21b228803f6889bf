#!/usr/bin/env python3
"""soak-correlator.py [--records N] [--max-growth-mb M] [--max-rss-mb R] [--csv FILE]
                     [-- CORRELATOR OPTIONS]

Runs `insert-correlate --listen` against an endless-looking producer and shows that its
memory stays flat (docs/performance.md, "insert-correlate live: memory over time"): N
records (default 20M) of traffic at one acknowledged WRITE per 100 us of data time from
2,000 long-lived QPs (10 processes on each of 20 hosts, 10 QPs each) toward 200
destination nodes, each message with its post_send, poll_cq and msg records, plus an
rkey-guessing attacker (an untraced address writing with unknown rkeys for 50 ms every
5 s) and a congested stretch (acks 400 us late for 40 ms every 7 s). Data time runs as
fast as the collector reads. The collector's RSS is sampled every second and printed with
the records sent so far (and written to --csv). With --max-growth-mb, exits 1 when RSS
grows by more than M MB from the end of the warm-up (the first quarter of the records) to
the end; with --max-rss-mb, when it is ever above R MB. Extra options after `--` go to insert-correlate (default: --max-delay 0.2 --ttl 2
--interval 0.5: live windows that keep up with a fast producer).

Needs the build: INSERT_BUILD_ROOT (default build/)."""
import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

from soak_rss import (
    BUILD, RssVerdict, add_limit_options, logger, rss_mb, split_passthrough, write_csv)

CORRELATE = os.path.join(BUILD, "correlator", "insert-correlate")
log = logger("soak")

HOSTS, PROCS_PER_HOST, QPS_PER_PROC, NODES = 20, 10, 10, 200
STEP_NS = 100_000  # one message per 100 us of data time
T0 = 1_700_000_000_000_000_000


def qp_of(q):
    """QP q's host, pid, QPN, object pointer and destination node."""
    host = q // (PROCS_PER_HOST * QPS_PER_PROC)
    pid = 1000 + q // QPS_PER_PROC
    return host, pid, 100 + q, hex(0x10000 + q), q % NODES


def own(q):
    host, pid, _, _, _ = qp_of(q)
    return {"pid": pid, "tid": pid, "comm": f"app{pid % 13}", "cgroup": 7,
            "ip": f"10.1.{host}.1", "host": f"h{host}"}


def setup_lines():
    out = []
    for q in range(HOSTS * PROCS_PER_HOST * QPS_PER_PROC):
        host, pid, qpn, obj, node = qp_of(q)
        base = dict(own(q), type="verb", t_ns=0)
        for verb, extra in (("create_qp", {"qp_type": "RC", "pd": "0x2"}),
                            ("modify_qp", {"state": "RTR", "dest_qpn": 5000 + q,
                                           "peer_ip": f"10.2.{node // 250}.{node % 250 + 1}",
                                           "rq_psn": 0}),
                            ("modify_qp", {"state": "RTS", "sq_psn": 0})):
            out.append(json.dumps(dict(base, verb=verb, wall_ns=T0 + len(out), qp=obj, qpn=qpn,
                                       ret=0, **extra)))
    return out


class Traffic:
    def __init__(self):
        self.k = 0
        self.psn = [0] * (HOSTS * PROCS_PER_HOST * QPS_PER_PROC)

    def lines(self, count):
        out = []
        nq = len(self.psn)
        while len(out) < count:
            k = self.k
            self.k += 1
            t = T0 + 10_000_000 + k * STEP_NS
            q = k % nq
            host, pid, qpn, obj, node = qp_of(q)
            psn = self.psn[q]
            self.psn[q] = (psn + 1) & 0xFFFFFF
            late = (t - T0) % 7_000_000_000 < 40_000_000  # a congested stretch
            dst = f"10.2.{node // 250}.{node % 250 + 1}"
            o = own(q)
            out.append(json.dumps(dict(o, type="verb", verb="post_send", t_ns=0, wall_ns=t, qp=obj,
                                       qpn=qpn, wr_id=k, opcode="RDMA_WRITE", signaled=True,
                                       len=64, remote_addr=65536, rkey=9, chain_index=0)))
            out.append(json.dumps({"type": "msg", "src_ip": o["ip"], "dst_ip": dst,
                                   "dst_qpn": 5000 + q, "src_qpn": qpn, "op": "WRITE",
                                   "psn_first": psn, "psn_last": psn, "pkts": 1, "bytes": 64,
                                   "va": 65536, "rkey": 9, "dma_len": 64, "t_first_ns": t + 400,
                                   "t_last_ns": t + 400,
                                   "t_ack_ns": t + (400_000 if late else 7_000),
                                   "retx_pkts": 0, "naks": 0, "rnr_naks": 0, "status": "ok"}))
            out.append(json.dumps(dict(o, type="verb", verb="poll_cq", t_ns=0,
                                       wall_ns=t + (420_000 if late else 9_000), cq="0x3",
                                       qpn=qpn, wr_id=k, status="SUCCESS", status_code=0,
                                       opcode="RDMA_WRITE", byte_len=0)))
            if (t - T0) % 5_000_000_000 < 50_000_000 and k % 50 == 0:  # the rkey guesser
                out.append(json.dumps({"type": "msg", "src_ip": "10.9.9.9", "dst_ip": dst,
                                       "dst_qpn": 5000 + q, "src_qpn": None, "op": "WRITE",
                                       "psn_first": k & 0xFFFFFF, "psn_last": k & 0xFFFFFF,
                                       "pkts": 1, "bytes": 64, "va": 4096, "rkey": 1000 + k % 977,
                                       "dma_len": 64, "t_first_ns": t + 500, "t_last_ns": t + 500,
                                       "t_ack_ns": None, "retx_pkts": 0, "naks": 1,
                                       "rnr_naks": 0, "status": "nak_access"}))
        return out


def main():
    argv, extra = split_passthrough(sys.argv[1:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=20_000_000)
    add_limit_options(ap)
    args = ap.parse_args(argv)
    extra = extra or ["--max-delay", "0.2", "--ttl", "2", "--interval", "0.5"]

    with tempfile.TemporaryDirectory(prefix="insert-soak.") as tmp:
        sock = os.path.join(tmp, "c.sock")
        proc = subprocess.Popen([CORRELATE, "--listen", sock, "-q", "--records", "/dev/null",
                                 *extra], stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 10
        while not os.path.exists(sock):
            if time.monotonic() > deadline or proc.poll() is not None:
                log("insert-correlate --listen did not start")
                return 2
            time.sleep(0.05)
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(sock)
        c.sendall(("\n".join(setup_lines()) + "\n").encode())
        traffic, sent, samples = Traffic(), 0, []
        start = last = time.monotonic()
        print("seconds,records,rss_mb")
        while sent < args.records:
            batch = traffic.lines(min(3000, args.records - sent))
            c.sendall(("\n".join(batch) + "\n").encode())
            sent += len(batch)
            now = time.monotonic()
            if now - last >= 1.0:
                last = now
                samples.append((now - start, sent, rss_mb(proc.pid)))
                print(f"{samples[-1][0]:.0f},{sent},{samples[-1][2]:.1f}", flush=True)
        c.close()
        samples.append((time.monotonic() - start, sent, rss_mb(proc.pid)))
        print(f"{samples[-1][0]:.0f},{sent},{samples[-1][2]:.1f}")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        if args.csv:
            write_csv(args.csv, "seconds,records,rss_mb",
                      (f"{s:.1f},{n},{r:.1f}" for s, n, r in samples))
        if proc.returncode != 0:
            log(f"insert-correlate exited {proc.returncode}: {err}")
            return 1
        verdict = RssVerdict([r for _, _, r in samples],
                             [r for _, n, r in samples if n >= args.records // 4])
        log(f"{sent} records in {samples[-1][0]:.0f} s; {verdict.describe()}")
        return verdict.check(args, log)


if __name__ == "__main__":
    sys.exit(main())

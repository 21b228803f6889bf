#!/usr/bin/env python3
"""stream-records.py SOCKET FILE... [--speed X] [--restart N] [--restart-pause S]

Plays JSON Lines record files into `insert-correlate --listen SOCKET` the way producers
would send them live: one connection per file (an insert-dp or an insert-trace), each
line sent when its data time comes, the files' clocks started together. A line's data
time is the newest time it carries (`t_last_ns`, `t_ack_ns`, `t_ns`, `t_first_ns` of
insert-dp's records, `wall_ns` of insert-trace's), never earlier than the line before it
in its file; the first line of all the files is time zero. `--speed X` plays X seconds of
data per second of wall time (default 1; 0: as fast as the socket takes them).
`--restart N`: the producer of the Nth file (from 1) closes its connection halfway through
its lines and connects again after `--restart-pause` seconds (default 0.5), as a
restarted producer does; no line is lost or repeated.

Exit status 0 when every line was sent, 1 when the collector went away, 2 on bad usage.
"""
import argparse
import json
import socket
import sys
import threading
import time

# insert-dp's records carry observer times; insert-trace's carry `wall_ns` (its own
# records - attach, trace_start - have a monotonic `t_ns`, which is not data time).
WIRE_TYPES = ("msg", "qp", "event")
WIRE_TIMES = ("t_last_ns", "t_ack_ns", "t_ns", "t_first_ns")


def data_time(line, previous):
    """The newest data time of a record line (ns), never before `previous`."""
    try:
        record = json.loads(line)
    except ValueError:
        return previous
    if not isinstance(record, dict):
        return previous
    if "wall_ns" in record:
        times = [record["wall_ns"]]
    elif record.get("type") in WIRE_TYPES:
        times = [record.get(k) for k in WIRE_TIMES]
    else:
        return previous
    newest = previous
    for value in times:
        if isinstance(value, int) and (newest is None or value > newest):
            newest = value
    return newest


def connect(path, deadline):
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            return s
        except OSError:
            s.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def produce(path, lines, times, t0, start, speed, restart, pause, failures):
    try:
        sock = connect(path, time.monotonic() + 10)
        half = len(lines) // 2 if restart else -1
        for i, (line, t) in enumerate(zip(lines, times)):
            if i == half:
                sock.close()
                time.sleep(pause)
                sock = connect(path, time.monotonic() + 10)
            if speed > 0 and t is not None:
                due = start + (t - t0) / 1e9 / speed
                wait = due - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
            sock.sendall(line)
        sock.close()
    except OSError as e:
        failures.append(str(e))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("socket")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--speed", type=float, default=1.0)
    ap.add_argument("--restart", type=int, default=0)
    ap.add_argument("--restart-pause", type=float, default=0.5)
    args = ap.parse_args()
    if args.speed < 0 or not 0 <= args.restart <= len(args.files):
        print("stream-records: --speed must be >= 0 and --restart a file's number",
              file=sys.stderr)
        return 2

    plays = []
    for path in args.files:
        with open(path, "rb") as f:
            lines = [l if l.endswith(b"\n") else l + b"\n" for l in f]
        times, previous = [], None
        for line in lines:
            previous = data_time(line, previous)
            times.append(previous)
        plays.append((lines, times))
    firsts = [next((t for t in times if t is not None), None) for _, times in plays]
    firsts = [t for t in firsts if t is not None]
    t0 = min(firsts) if firsts else 0

    failures = []
    start = time.monotonic()
    threads = [threading.Thread(target=produce,
                                args=(args.socket, lines, times, t0, start, args.speed,
                                      args.restart == k + 1, args.restart_pause, failures))
               for k, (lines, times) in enumerate(plays)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        print("stream-records: " + "; ".join(failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

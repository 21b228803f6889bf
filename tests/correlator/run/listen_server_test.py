#!/usr/bin/env python3
"""insert-correlate --listen as a server that cannot be knocked over (docs/correlation.md 7):

  fd_limit       1,100 connections under a limit of 1,024 descriptors: the collector refuses
                 the ones it has no descriptor for (closed at once, counted in
                 summary.listen.refused, said on stderr), goes on serving a producer connected
                 before, and never ends because of it
  long_line      a 300 MB line without a newline: the connection is closed past --max-line
                 with one line on stderr naming it, counted in summary.bad.too_long; the
                 lines before it are read; RSS stays under 100 MB
  second_listen  a second --listen on the path of a live collector exits 2 naming the first's
                 pid, and leaves the first's socket alone; a stale socket file is replaced
  socket_mode    the socket is 0660 under umask 0; --listen-group sets its group; an unknown
                 group exits 2 naming it
  sighup         the records file renamed (logrotate), then SIGHUP: the records after it go
                 to a new file at the path, one stderr line says so
  html_checked   --html in a missing directory exits 2 naming it before any input is read,
                 in a batch run and a live one

usage: listen_server_test.py CASE"""
import grp
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

SRC = os.environ.get("INSERT_SOURCE_ROOT",
                     os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BUILD = os.environ.get("INSERT_BUILD_ROOT", os.path.join(SRC, "build"))
CORRELATE = os.path.join(BUILD, "correlator", "insert-correlate")


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


class Collector:
    """insert-correlate --listen, its stderr collected line by line."""

    def __init__(self, tmp, extra=(), nofile=None, umask=None, name="correlator.sock"):
        self.sock = os.path.join(tmp, name)
        self.out = os.path.join(tmp, "out.jsonl")

        def child():
            if nofile:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
            if umask is not None:
                os.umask(umask)

        self.p = subprocess.Popen([CORRELATE, "--listen", self.sock, "--records", self.out,
                                   "--quiet", "--interval", "0.1", *extra],
                                  stderr=subprocess.PIPE, text=True, preexec_fn=child)
        self.lines = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        end = time.monotonic() + 10
        while not os.path.exists(self.sock):
            check(time.monotonic() < end and self.p.poll() is None,
                  "the collector did not come up: " + "\n".join(self.lines))
            time.sleep(0.02)
        # The socket file exists from bind(); connections are taken once it listens.
        while True:
            try:
                connect(self.sock).close()
                break
            except (ConnectionRefusedError, BlockingIOError):
                check(time.monotonic() < end, "the collector does not listen")
                time.sleep(0.02)

    def _read(self):
        for line in self.p.stderr:
            self.lines.append(line.rstrip("\n"))

    def has(self, text):
        return any(text in l for l in self.lines)

    def stop(self, sig=signal.SIGTERM):
        if self.p.poll() is None:
            self.p.send_signal(sig)
        rc = self.p.wait(timeout=30)
        self.reader.join(5)
        return rc

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(10)


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s


def wait_for(cond, timeout, what):
    end = time.monotonic() + timeout
    while not cond():
        check(time.monotonic() < end, "timed out waiting for " + what)
        time.sleep(0.05)


def read_records(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def summary(path):
    return [r for r in read_records(path) if r["type"] == "summary"][-1]


def event(k):
    """A record the collector reads and counts (as ignored) without anything to join."""
    return (json.dumps({"type": "event", "kind": "gap", "ip": "10.0.0.1", "qpn": k, "t_ns": k})
            + "\n").encode()


def rss_kb(pid, field="VmHWM"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def case_fd_limit(tmp):
    c = Collector(tmp, nofile=1024)
    try:
        producer = connect(c.sock)
        producer.sendall(b"".join(event(k) for k in range(100)))
        # This process needs more than 1,024 descriptors for its side of the connections.
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
        flood, ended = [], 0
        for _ in range(1100):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            end = time.monotonic() + 10
            while True:
                try:
                    s.connect(c.sock)
                    break
                except BlockingIOError:  # the backlog is full: the collector is behind
                    check(time.monotonic() < end, f"connection {len(flood)} not taken")
                    time.sleep(0.005)
            flood.append(s)
        wait_for(lambda: c.has("refusing connections"), 10, "the refusal line")
        # The producer connected first is still served, and the collector goes on.
        producer.sendall(b"".join(event(k) for k in range(100, 200)))
        time.sleep(2)
        check(c.p.poll() is None, f"the collector ended (status {c.p.poll()}): {c.lines}")
        for s in flood:  # the refused ones were closed by the collector: EOF
            s.settimeout(0)
            try:
                ended += s.recv(1) == b""
            except BlockingIOError:
                pass
            s.close()
        producer.close()
        time.sleep(0.5)
        check(c.p.poll() is None, "the collector ended when the connections closed")
        # Connections are taken again once descriptors are free.
        again = connect(c.sock)
        again.sendall(event(999))
        again.close()
        wait_for(lambda: c.has("accepting connections again"), 10, "the line saying so")
        rc = c.stop()
    finally:
        c.kill()
    check(rc == 0, f"exit status {rc}")
    s = summary(c.out)
    refusals = [l for l in c.lines if "refusing connections" in l]
    check(len(refusals) == 1 and "Too many open files" in refusals[0] and "1024" in refusals[0],
          f"one line naming the cause and the limit: {refusals}")
    listen = s["listen"]
    check(listen["refused"] > 0 and listen["refused"] == ended,
          f"refused {listen['refused']}, {ended} connections saw their end at once")
    check(listen["connections"] + listen["refused"] == 1100 + 3,
          f"accepted + refused = every connection: {listen}")
    check(s["inputs"]["lines"] == 201, f"every line of the producers read: {s['inputs']}")
    print(f"PASS fd_limit: {listen['connections']} accepted, {listen['refused']} refused and "
          f"closed at once, the first producer served throughout; '{refusals[0]}'")


def case_long_line(tmp):
    c = Collector(tmp)
    try:
        s = connect(c.sock)  # connection 2: the first was Collector's check that it listens
        s.sendall(b"".join(event(k) for k in range(3)))
        chunk, sent, error = b"x" * (1 << 20), 0, None
        try:
            while sent < 300 << 20:
                s.sendall(chunk)
                sent += len(chunk)
        except OSError as e:
            error = e
        wait_for(lambda: c.has("longer than --max-line"), 10, "the line on stderr")
        hwm = rss_kb(c.p.pid)
        check(c.p.poll() is None, "the collector ended")
        # Another producer is served after it.
        other = connect(c.sock)
        other.sendall(event(4))
        other.close()
        time.sleep(0.3)
        rc = c.stop()
    finally:
        c.kill()
    check(rc == 0, f"exit status {rc}")
    check(error is not None and sent < 16 << 20,
          f"the sender was cut off after {sent >> 20} MiB ({error})")
    check(hwm < 100_000, f"peak RSS {hwm} kB")
    line = [l for l in c.lines if "longer than --max-line" in l]
    check(len(line) == 1 and "#2:4:" in line[0] and "1048576" in line[0] and
          f"pid {os.getpid()}" in line[0] and "connection of" in line[0], f"the line: {line}")
    s = summary(c.out)
    check(s["bad"]["too_long"] == 1 and s["inputs"]["lines"] == 4,
          f"summary {s['inputs']} {s['bad']}")
    print(f"PASS long_line: cut off after {sent >> 20} MiB, peak RSS {hwm // 1024} MB; '{line[0]}'")


def case_second_listen(tmp):
    first = Collector(tmp)
    try:
        r = subprocess.run([CORRELATE, "--listen", first.sock, "--quiet"], capture_output=True,
                           text=True, timeout=30)
        check(r.returncode == 2, f"second --listen exit status {r.returncode}")
        msg = r.stderr.strip().splitlines()
        check(len(msg) >= 1 and f"pid {first.p.pid} (insert-correlate)" in msg[-1] and
              first.sock in msg[-1], f"names the first: {msg}")
        check(os.path.exists(first.sock), "the first's socket was removed")
        s = connect(first.sock)  # the first still serves its path
        s.sendall(event(1))
        s.close()
        time.sleep(0.3)
        check(first.stop() == 0, "the first's exit status")
    finally:
        first.kill()
    check(summary(first.out)["inputs"]["lines"] == 1, "the first read its producer")
    # A socket file nobody listens on (a run killed with SIGKILL): replaced.
    stale = os.path.join(tmp, "stale.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(stale)
    s.close()
    again = Collector(tmp, name="stale.sock")
    try:
        check(again.stop() == 0, "a stale socket was not replaced")
    finally:
        again.kill()
    print(f"PASS second_listen: '{msg[-1]}'; a stale socket replaced")


def case_socket_mode(tmp):
    c = Collector(tmp, umask=0)
    try:
        mode = os.stat(c.sock).st_mode & 0o777
        check(mode == 0o660, f"mode {oct(mode)} under umask 0")
    finally:
        c.stop()
        c.kill()
    # A group other than the process's, when root may give it; else the process's own.
    names = [g.gr_name for g in grp.getgrall()]
    group = next((g for g in ("nogroup", "daemon", "users") if g in names and os.geteuid() == 0),
                 grp.getgrgid(os.getegid()).gr_name)
    c = Collector(tmp, extra=["--listen-group", group], umask=0o077, name="group.sock")
    try:
        st = os.stat(c.sock)
        check(st.st_mode & 0o777 == 0o660 and grp.getgrgid(st.st_gid).gr_name == group,
              f"mode {oct(st.st_mode & 0o777)} group {st.st_gid} under umask 077")
    finally:
        c.stop()
        c.kill()
    r = subprocess.run([CORRELATE, "--listen", os.path.join(tmp, "x.sock"), "--listen-group",
                        "no-such-group-here"], capture_output=True, text=True, timeout=30)
    check(r.returncode == 2 and "--listen-group no-such-group-here" in r.stderr and
          not os.path.exists(os.path.join(tmp, "x.sock")),
          f"unknown group: {r.returncode} {r.stderr}")
    print(f"PASS socket_mode: 0660 under umask 0 and 077, group {group}; an unknown group refused")


def case_sighup(tmp):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "live"))
    import live_test  # its workload: 200 WRITEs with their host records, one post lost
    lines = live_test.workload(200)
    half = len(lines) // 2
    c = Collector(tmp, extra=["--max-delay", "0.05"])
    try:
        s = connect(c.sock)
        s.sendall("".join(lines[:half]).encode())
        wait_for(lambda: '"type":"e2e"' in open(c.out).read(), 10, "e2e records before the HUP")
        rotated = c.out + ".1"
        os.rename(c.out, rotated)  # logrotate's move, then its postrotate HUP
        c.p.send_signal(signal.SIGHUP)
        wait_for(lambda: c.has("SIGHUP"), 10, "the SIGHUP line")
        check(os.path.exists(c.out), "no new file at the path after SIGHUP")
        s.sendall("".join(lines[half:]).encode())
        s.close()
        wait_for(lambda: '"type":"e2e"' in open(c.out).read(), 10, "e2e records after the HUP")
        rc = c.stop()
    finally:
        c.kill()
    check(rc == 0, f"exit status {rc}")
    line = [l for l in c.lines if "SIGHUP" in l]
    check(line == [f"insert-correlate: SIGHUP: --records {c.out} reopened"], f"{line}")
    old, new = read_records(rotated), read_records(c.out)
    check(all(r["type"] != "summary" for r in old), "the rotated file got the summary")
    check(new[-1]["type"] == "summary" and new[-1]["inputs"]["lines"] == len(lines),
          f"the summary goes to the new file: {new[-1]}")
    e2e_old = sum(r["type"] == "e2e" for r in old)
    e2e_new = sum(r["type"] == "e2e" for r in new)
    check(e2e_old > 0 and e2e_new > 0 and e2e_old + e2e_new == 199,
          f"e2e records {e2e_old} before, {e2e_new} after the HUP")
    print(f"PASS sighup: {e2e_old} e2e records in the rotated file, {e2e_new} and the summary "
          "in the new one")


def case_html_checked(tmp):
    missing = os.path.join(tmp, "no-such-dir", "report.html")
    data = os.path.join(tmp, "in.jsonl")
    with open(data, "wb") as f:
        f.write(event(1))
    fifo = os.path.join(tmp, "in.fifo")
    os.mkfifo(fifo)
    for argv, what in (([data], "batch"), (["--listen", os.path.join(tmp, "h.sock")], "live"),
                       ([fifo], "live fifo")):
        t0 = time.monotonic()
        r = subprocess.run([CORRELATE, *argv, "--html", missing, "--quiet"], capture_output=True,
                           text=True, timeout=30)
        check(r.returncode == 2 and r.stderr.strip().endswith(
            f"--html {missing}: directory {os.path.dirname(missing)}: No such file or directory"),
              f"{what}: {r.returncode} {r.stderr}")
        check(time.monotonic() - t0 < 5, f"{what}: took {time.monotonic() - t0:.1f} s")
    check(not os.path.exists(os.path.join(tmp, "h.sock")), "the live run listened before the check")
    not_dir = os.path.join(data, "report.html")
    r = subprocess.run([CORRELATE, data, "--html", not_dir, "--quiet"], capture_output=True,
                       text=True, timeout=30)
    check(r.returncode == 2 and "Not a directory" in r.stderr, f"{r.stderr}")
    print("PASS html_checked: a missing directory named before any input, batch and live")


CASES = {"fd_limit": case_fd_limit, "long_line": case_long_line,
         "second_listen": case_second_listen, "socket_mode": case_socket_mode,
         "sighup": case_sighup, "html_checked": case_html_checked}


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        print(__doc__, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        try:
            CASES[sys.argv[1]](tmp)
        except Failure as e:
            print(f"FAIL {sys.argv[1]}: {e}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

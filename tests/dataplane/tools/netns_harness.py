"""What the insert-dp namespace tests (live_test.py, records_socket_test.py) share: a process
whose stderr is kept line by line, the scripts/netns-inline.sh topology as a context, and a
wait with a deadline. Every process started is stopped by its pid; the namespaces carry
the test's process id and are always removed."""
import os
import signal
import subprocess
import threading
import time


def wait_for(cond, timeout, what, fail):
    """Polls `cond` every 50 ms; `fail("timed out waiting for WHAT")` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    fail("timed out waiting for " + what)


class Proc:
    """A process whose stderr is collected line by line."""

    def __init__(self, argv, stdout=subprocess.DEVNULL):
        self.argv = argv
        self.p = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE, text=True)
        self.lines = []
        self.killed = False  # it ignored the stop signal and was killed
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for line in self.p.stderr:
            self.lines.append(line.rstrip("\n"))

    def has(self, text):
        return any(text in l for l in self.lines)

    def count(self, text):
        return sum(text in l for l in self.lines)

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Sends `sig`, waits `timeout` s, kills it if it did not end; its exit status."""
        if self.p.poll() is None:
            self.p.send_signal(sig)
        try:
            self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait(10)
            self.killed = True
        self.t.join(5)
        return self.p.returncode


class Topology:
    """scripts/netns-inline.sh's A - MID - B namespaces, named PREFIX<pid>, for a `with`."""

    def __init__(self, netns_script, prefix):
        self.netns = netns_script
        self.name = f"{prefix}{os.getpid() % 100000}"

    def __enter__(self):
        subprocess.run([self.netns, "down", self.name], capture_output=True)
        subprocess.run([self.netns, "up", self.name], check=True, timeout=30)
        return self

    def __exit__(self, *exc):
        subprocess.run([self.netns, "down", self.name], capture_output=True, timeout=30)

    def cmd(self, role, *argv):
        return [self.netns, "exec", self.name, role] + list(argv)

"""What the soak scripts (soak-correlator.py, soak-dataplane.py, soak-tracer.py) share: a
process's resident memory, the options they pass through after `--`, the RSS limits and the
verdict on a run's samples. A run passes when RSS never exceeds --max-rss-mb and grows by at
most --max-growth-mb from the end of the warm-up to its peak after it."""
import json
import os
import signal
import subprocess
import sys
import threading


def rss_mb(pid):
    """VmRSS of `pid` in MB; 0 once the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def split_passthrough(argv):
    """(the script's own arguments, those after `--` for the program under test)."""
    if "--" not in argv:
        return argv, []
    cut = argv.index("--")
    return argv[:cut], argv[cut + 1:]


def add_limit_options(ap, warmup_option=False):
    if warmup_option:
        ap.add_argument("--warmup", type=float, default=None,
                        help="seconds of warm-up (default a quarter of the run)")
    ap.add_argument("--max-growth-mb", type=float, default=None,
                    help="fail when RSS grows by more than M MB after the warm-up")
    ap.add_argument("--max-rss-mb", type=float, default=None,
                    help="fail when RSS is ever above R MB")
    ap.add_argument("--csv", default=None, help="write the samples to this file")


def missing_prerequisite(root_for, programs, log):
    """Says (through `log`) and returns 2 when the script does not run as root (needed for
    `root_for`) or one of `programs` is not built; None when it can go on."""
    if os.geteuid() != 0:
        log(f"needs root ({root_for})")
        return 2
    for program in programs:
        if not os.path.exists(program):
            log(f"{program} is not built")
            return 2
    return None


def terminate(proc, seconds):
    """SIGTERM to `proc` if it runs, then kill after `seconds`: True when it stopped on its
    own or on SIGTERM, False when it had to be killed."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(seconds)
        return True
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
        return False


def write_csv(path, header, rows):
    with open(path, "w") as f:
        f.write(header + "\n")
        f.writelines(row + "\n" for row in rows)


class RssVerdict:
    """The RSS figures of a run: `all_mb` every sample, `after_mb` those after the warm-up."""

    def __init__(self, all_mb, after_mb):
        after_mb = after_mb or all_mb[-1:]
        self.warm, self.low_after, self.peak_after = after_mb[0], min(after_mb), max(after_mb)
        self.peak, self.end = max(all_mb), all_mb[-1]

    def describe(self):
        return (f"RSS {self.warm:.1f} MB after warm-up, {self.low_after:.1f}-"
                f"{self.peak_after:.1f} MB after, {self.end:.1f} MB at the end, "
                f"{self.peak:.1f} MB at most")

    def check(self, args, log):
        """0 when the run kept to --max-rss-mb and --max-growth-mb, else 1 (said by `log`)."""
        rc = 0
        if args.max_rss_mb is not None and self.peak > args.max_rss_mb:
            log(f"RSS reached {self.peak:.1f} MB (limit {args.max_rss_mb} MB)")
            rc = 1
        growth = self.peak_after - self.warm
        if args.max_growth_mb is not None and growth > args.max_growth_mb:
            log(f"RSS grew {growth:.1f} MB after warm-up (limit {args.max_growth_mb} MB)")
            rc = 1
        return rc


class RecordCounter(threading.Thread):
    """Reads a producer's JSON lines from `stream` and throws them away: counts the lines
    and, for each name in `patterns`, the lines holding its bytes; keeps the last 64 KiB of
    whole lines for last_record()."""

    def __init__(self, stream, patterns=None):
        super().__init__(daemon=True)
        self.stream, self.patterns = stream, patterns or {}
        self.lines, self.partial, self.tail = 0, b"", b""
        self.counts = {name: 0 for name in self.patterns}

    def run(self):
        while True:
            chunk = self.stream.read1(1 << 20)
            if not chunk:
                return
            data = self.partial + chunk
            cut = data.rfind(b"\n") + 1
            whole, self.partial = data[:cut], data[cut:]
            self.lines += whole.count(b"\n")
            for name, pattern in self.patterns.items():
                self.counts[name] += whole.count(pattern)
            self.tail = (self.tail + whole)[-(1 << 16):]

    def last_record(self, record_type):
        """The last record of `record_type` read (parsed), or None."""
        needle = b'"type":"' + record_type.encode() + b'"'
        for line in reversed(self.tail.split(b"\n")):
            if needle in line:
                try:
                    return json.loads(line)
                except ValueError:
                    return None
        return None


def logger(name):
    return lambda msg: print(f"{name}: {msg}", file=sys.stderr, flush=True)


HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("INSERT_BUILD_ROOT", os.path.join(HERE, "..", "build"))

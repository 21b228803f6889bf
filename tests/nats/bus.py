"""What the NATS tests share (docs/scale-out.md): a real nats-server with JetStream on a
loopback port of the test's own, its store in the test's directory; the stream read back
with nats_dump (the tests' consumer, libnats); and the partition rule and message format
written again here from the documentation - independently of the C++ - to check every
message against."""
import json
import os
import signal
import socket
import subprocess
import time
from collections import defaultdict

DATAPATH_VERBS = {"post_send", "post_recv", "poll_cq"}
BATCH_BYTES = 64 << 10


class Failure(Exception):
    pass


def check(cond, message):
    if not cond:
        raise Failure(message)


def wait_until(predicate, what, deadline_s=30.0):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)  # polling interval of a condition with a deadline
    raise Failure(f"timed out after {deadline_s}s waiting for {what}")


def free_port():
    """A loopback port nobody listens on (the servers of a test come and go on it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NatsServer:
    """nats-server -js on 127.0.0.1:PORT, its store in STORE (kept across restarts)."""

    def __init__(self, port, store, log):
        self.port, self.store, self.log_path = port, store, log
        self.proc = None
        self.url = f"nats://127.0.0.1:{port}"

    def start(self):
        self.log = open(self.log_path, "a")
        self.proc = subprocess.Popen(["nats-server", "-js", "-sd", self.store, "-a", "127.0.0.1",
                                      "-p", str(self.port)], stdout=self.log, stderr=self.log)

        def ready():
            check(self.proc.poll() is None, f"nats-server exited: {self.log_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    return s.recv(4).startswith(b"INFO")
            except OSError:
                return False
        wait_until(ready, f"nats-server on port {self.port}")
        return self

    def log_text(self):
        with open(self.log_path) as f:
            return f.read()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self.log.close()
        self.proc = None

    def pause(self):
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self):
        self.proc.send_signal(signal.SIGCONT)


def dump(nats_dump, url, stream):
    """Every message of `stream`, in stream order: dicts with seq, subject, headers, data."""
    p = subprocess.run([nats_dump, url, stream], capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"nats_dump {stream}: exit {p.returncode}: {p.stderr.strip()}")
    return [json.loads(line) for line in p.stdout.splitlines()]


def stream_info(nats_dump, url, stream):
    p = subprocess.run([nats_dump, url, stream, "--info"], capture_output=True, text=True,
                       timeout=60)
    check(p.returncode == 0, f"nats_dump {stream} --info: exit {p.returncode}: {p.stderr.strip()}")
    return json.loads(p.stdout)


def fnv1a64(text):
    h = 0xcbf29ce484222325
    for b in text.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def load_hosts(path):
    """--nats-hosts: every extra address -> its host's primary one."""
    primary = {}
    with open(path) as f:
        for line in f:
            words = line.split("#")[0].split()
            for w in words[1:]:
                primary[w] = words[0]
    return primary


def partition_of(ip, n, hosts):
    return fnv1a64(hosts.get(ip, ip)) % n


def partitions_of(record, n, hosts=None):
    """docs/scale-out.md "The partition rule": the set of partitions `record` goes to."""
    hosts = hosts or {}
    t = record.get("type")
    every = set(range(n))
    if t == "msg":
        ips = [record["src_ip"], record["dst_ip"]]
    elif t in ("qp", "event"):
        ips = [record["ip"], record.get("peer_ip")]
    elif t == "verb" and record["verb"] in DATAPATH_VERBS and record.get("ip"):
        ips = [record["ip"]]
    else:
        return every  # the control plane, summaries, anything else
    return {partition_of(ip, n, hosts) for ip in ips if ip}


def check_stream(messages, lines, n, prefix="insert", hosts=None, schema=None):
    """The stream holds `lines` (one producer's records, as its file has them) exactly as
    the rule says: each partition's messages, in their Insert-Seq order, are the lines that
    go to that partition in the file's order - every record exactly once per partition it
    belongs to, nowhere else - and every message's headers are as documented. Returns
    {partition: records} and the producer's identity."""
    check(messages, "the stream is empty")
    want = defaultdict(list)
    for line in lines:
        for p in partitions_of(json.loads(line), n, hosts):
            want[p].append(line)
    by_part = defaultdict(list)
    producers = set()
    ids = set()
    for m in messages:
        h = m["headers"]
        k = int(h.get("Insert-Partition", -1))
        check(m["subject"] == f"{prefix}.part.{k}", f"message {m['seq']}: subject {m['subject']}, "
              f"Insert-Partition {k}")
        check(0 <= k < n, f"message {m['seq']}: partition {k} of {n}")
        check(h.get("Insert-Partitions") == str(n),
              f"message {m['seq']}: Insert-Partitions {h.get('Insert-Partitions')}, want {n}")
        if schema:
            check(h.get("Insert-Schema") == schema, f"Insert-Schema {h.get('Insert-Schema')}")
        data = m["data"]
        check(data.endswith("\n"), f"message {m['seq']}: does not end with a newline")
        body = data.split("\n")[:-1]
        check(int(h["Insert-Records"]) == len(body),
              f"message {m['seq']}: Insert-Records {h['Insert-Records']}, {len(body)} lines")
        check(len(data.encode()) <= BATCH_BYTES or len(body) == 1,
              f"message {m['seq']}: {len(data)} bytes in {len(body)} records")
        producer, seq = h["Insert-Producer"], int(h["Insert-Seq"])
        check(h["Nats-Msg-Id"] == f"{producer}:{k}:{seq}", f"Nats-Msg-Id {h['Nats-Msg-Id']}")
        check(h["Nats-Msg-Id"] not in ids, f"message id {h['Nats-Msg-Id']} stored twice")
        ids.add(h["Nats-Msg-Id"])
        producers.add(producer)
        by_part[k].append((seq, body))
    check(len(producers) == 1, f"producers {producers}")
    got = {}
    for k, batches in by_part.items():
        seqs = sorted(s for s, _ in batches)
        check(seqs == list(range(1, len(seqs) + 1)), f"partition {k}: sequences {seqs[:20]}...")
        got[k] = [line + "\n" for _, body in sorted(batches) for line in body]
    for k in range(n):
        w, g = want.get(k, []), got.get(k, [])
        if w != g:
            extra = [x for x in g if x not in w][:2]
            missing = [x for x in w if x not in g][:2]
            raise Failure(f"partition {k}: {len(g)} records, want {len(w)}; "
                          f"not wanted {extra}, missing {missing}")
    return {k: len(v) for k, v in got.items()}, producers.pop()

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
import urllib.request
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


class NatsCluster:
    """Three nats-server -js nodes on loopback ports of the test's own, one cluster: a
    configuration file per node in `tmp` (its name, client port, monitoring port, JetStream
    store, the cluster's route port and routes to the two others). `urls` is --nats's list.
    `kill(i)` is SIGKILL; `restart(i)` starts node i again on the same ports and store."""

    SIZE = 3

    def __init__(self, tmp, name="cluster"):
        self.tmp, self.name = tmp, name
        # Every port picked before any node starts: each node names the others' routes.
        self.ports = [(free_port(), free_port(), free_port()) for _ in range(self.SIZE)]
        self.procs = [None] * self.SIZE
        self.logs = [None] * self.SIZE
        self.urls = ",".join(self.url(i) for i in range(self.SIZE))
        for i in range(self.SIZE):
            with open(self.conf(i), "w") as f:
                f.write(self.config(i))

    def node(self, i):
        return f"{self.name}-n{i}"

    def url(self, i):
        return f"nats://127.0.0.1:{self.ports[i][0]}"

    def conf(self, i):
        return os.path.join(self.tmp, self.node(i) + ".conf")

    def log_path(self, i):
        return os.path.join(self.tmp, self.node(i) + ".log")

    def config(self, i):
        client, http, route = self.ports[i]
        routes = ", ".join(f"nats-route://127.0.0.1:{self.ports[j][2]}"
                           for j in range(self.SIZE) if j != i)
        store = os.path.join(self.tmp, self.node(i) + "-store")
        return (f"server_name: {self.node(i)}\n"
                f"listen: 127.0.0.1:{client}\n"
                f"http: 127.0.0.1:{http}\n"
                f"jetstream {{ store_dir: \"{store}\" }}\n"
                # The programs connect without credentials, into an account with JetStream;
                # the system account is the tests' own, for JetStream's meta step down.
                "accounts {\n  SYS: { users: [{user: sys, password: sys}] }\n"
                "  INSERT: { jetstream: enabled, users: [{user: insert, password: insert}] }\n"
                "}\nsystem_account: SYS\nno_auth_user: insert\n"
                f"cluster {{\n  name: {self.name}\n  listen: 127.0.0.1:{route}\n"
                f"  routes: [{routes}]\n}}\n")

    def start_node(self, i):
        check(self.procs[i] is None, f"{self.node(i)} runs already")
        self.logs[i] = open(self.log_path(i), "a")
        self.procs[i] = subprocess.Popen(["nats-server", "-c", self.conf(i)],
                                         stdout=self.logs[i], stderr=self.logs[i])

    def start(self):
        for i in range(self.SIZE):
            self.start_node(i)
        self.wait_ready()
        return self

    def monitor(self, i, path):
        """A monitoring endpoint of node i (/jsz, /connz, /healthz...) as JSON; None when
        the node does not answer."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ports[i][1]}{path}",
                                        timeout=2) as r:
                return json.loads(r.read())
        except (OSError, ValueError):
            return None

    def running(self):
        return [i for i in range(self.SIZE) if self.procs[i] and self.procs[i].poll() is None]

    def meta_leader(self, i):
        """The JetStream meta leader as node i sees it ("" when there is none)."""
        jsz = self.monitor(i, "/jsz") or {}
        return (jsz.get("meta_cluster") or {}).get("leader", "")

    def wait_ready(self, deadline_s=30.0):
        """Every running node healthy (its JetStream current) and agreeing on a meta leader."""
        def ready():
            for i in range(self.SIZE):
                p = self.procs[i]
                check(p is None or p.poll() is None,
                      f"{self.node(i)} exited: {self.log_text(i)[-2000:]}")
            up = self.running()
            leaders = {self.meta_leader(i) for i in up}
            healthy = all((self.monitor(i, "/healthz") or {}).get("status") == "ok"
                          for i in up)
            return healthy and len(leaders) == 1 and "" not in leaders
        wait_until(ready, f"{self.name}: a JetStream meta leader", deadline_s)

    def stream_leader(self, stream):
        """The node leading `stream`'s replicas, as every running node sees it
        (/jsz?streams=true); None while there is none or they do not agree (an election)."""
        views = set()
        for i in self.running():
            jsz = self.monitor(i, "/jsz?streams=true") or {}
            leader = None
            for account in jsz.get("account_details") or []:
                for s in account.get("stream_detail") or []:
                    if s.get("name") == stream:
                        leader = (s.get("cluster") or {}).get("leader") or None
            views.add(leader)
        leader = views.pop() if len(views) == 1 else None
        return int(leader.rsplit("-n", 1)[1]) if leader else None

    def clients(self, i):
        """The names of node i's client connections (the programs name theirs)."""
        connz = self.monitor(i, "/connz?limit=1000") or {}
        return [c.get("name", "") for c in connz.get("connections") or []]

    def step_down(self, stream=None):
        """Asks `stream`'s leader - or JetStream's meta leader, through the system account -
        to hand its leadership to another node (JetStream's API, one request through any
        running node)."""
        subject = f"$JS.API.STREAM.LEADER.STEPDOWN.{stream}" if stream \
            else "$JS.API.META.LEADER.STEPDOWN"
        reply = request(self.url(self.running()[0]), subject,
                        user=None if stream else ("sys", "sys"))
        check(reply.get("success"), f"{subject}: {reply}")

    def move_leaders_off(self, i, stream):
        """JetStream's meta leader and `stream`'s leader on nodes other than i."""
        if self.meta_leader(i) == self.node(i):
            self.step_down()
            wait_until(lambda: self.meta_leader(i) not in ("", self.node(i)),
                       f"a meta leader other than {self.node(i)}")
        if self.stream_leader(stream) == i:
            self.step_down(stream)
            wait_until(lambda: self.stream_leader(stream) not in (None, i),
                       f"a leader of {stream} other than {self.node(i)}")

    def move_stream_leader_to(self, i, stream, attempts=12):
        """`stream`'s leader on node i (step-downs until the election picks it): killing i
        then kills the stream's leader."""
        for _ in range(attempts):
            leader = wait_until(lambda: self.stream_leader(stream) is not None and
                                [self.stream_leader(stream)], f"a leader of {stream}")[0]
            if leader == i:
                return
            self.step_down(stream)
            wait_until(lambda: self.stream_leader(stream) not in (None, leader),
                       f"a new leader of {stream}")
        raise Failure(f"{stream}'s leader never on {self.node(i)} in {attempts} elections")

    def kill(self, i):
        self.procs[i].kill()
        self.procs[i].wait()
        self.procs[i] = None
        self.logs[i].close()

    def restart(self, i):
        self.start_node(i)

    def log_text(self, i):
        with open(self.log_path(i)) as f:
            return f.read()

    def stop(self):
        for i in self.running():
            self.procs[i].terminate()
        for i in range(self.SIZE):
            if self.procs[i]:
                try:
                    self.procs[i].wait(20)
                except subprocess.TimeoutExpired:
                    self.procs[i].kill()
                    self.procs[i].wait()
                self.procs[i] = None
                self.logs[i].close()


def request(url, subject, payload=b"", user=None, timeout=5.0):
    """One request on the NATS protocol (text over TCP: INFO, CONNECT, SUB, PUB, MSG), its
    JSON reply: for the JetStream API calls no test tool makes. `user`: (name, password)."""
    host, port = url.removeprefix("nats://").rsplit(":", 1)
    inbox = "_INBOX.insert-test"
    connect = {"verbose": False, "pedantic": False}
    if user:
        connect.update(user=user[0], **{"pass": user[1]})
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        f = s.makefile("rb")
        check(f.readline().startswith(b"INFO"), f"{url}: no INFO")
        s.sendall(f"CONNECT {json.dumps(connect)}\r\n".encode() +
                  f"SUB {inbox} 1\r\nPUB {subject} {inbox} {len(payload)}\r\n".encode() +
                  payload + b"\r\n")
        while True:
            line = f.readline()
            check(line and not line.startswith(b"-ERR"), f"{url} {subject}: {line!r}")
            if line.startswith(b"PING"):
                s.sendall(b"PONG\r\n")
            elif line.startswith(b"MSG"):
                size = int(line.split()[-1])
                return json.loads(f.read(size + 2)[:size])


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

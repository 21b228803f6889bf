"""Fixed insert-trace and insert-dp records for the report and Alertmanager tests
(docs/correlation.md), with hand-derived outcomes. One clock (--same-clock); T0 is a
multiple of 1 s, so time bins start on it.

Host hB runs the server (pid 300, cgroup 9, 10.0.0.2): QP 50 connected to the first
client's QP 17, QP 60 to the second client's QP 30, and an MR (rkey 77, 1 MiB at 0x10000,
remote read/write/atomic).
- client 1 (host hA, pid 100, cgroup 7, 10.0.0.1, comm HOSTILE_COMM): 300 WRITEs 1 ms apart
  from T0 (network latency 5 us), then 20 more 1 ms apart from T0 + 400 ms (205 us);
- client 2 (host HOSTILE_HOST, pid 500, cgroup 11, 10.0.0.3, comm "victim"): 20 WRITEs next
  to the second burst (210 us): with client 1's burst, a congestion episode at hB;
- every WRITE: host part 1 us, completion part 1 us;
- optionally an attacker on an untraced address (10.0.0.9) WRITEs to QP 50 with rkey 99 at
  T0 + 500 ms: rkey_unknown (no such MR) and peer_mismatch (QP 50's peer is 10.0.0.1), both
  naming the server (pid 300) as the victim."""
import json

T0 = 1_700_000_000 * 10**9
HOSTILE_COMM = "<svg onload=x()>"  # 16 bytes: what a process can name itself
HOSTILE_HOST = "hC</script><script>document.body.setAttribute('data-pwned','1')</script>"
MR_BASE = 0x10000


class Proc:
    def __init__(self, host, pid, comm, cgroup, ip):
        self.host, self.pid, self.comm, self.cgroup, self.ip = host, pid, comm, cgroup, ip

    def verb(self, name, wall, **fields):
        r = {"type": "verb", "verb": name, "t_ns": wall - T0 + 1000, "wall_ns": wall, "pid": self.pid,
             "tid": self.pid, "comm": self.comm, "cgroup": self.cgroup, "ip": self.ip, "ctx": "0x1",
             "host": self.host}
        r.update(fields)
        return r

    def connect(self, wall, qp, qpn, peer_ip, peer_qpn, sq_psn):
        return [self.verb("create_qp", wall, qp=qp, qpn=qpn, qp_type="RC", pd="0x2000", ret=0),
                self.verb("modify_qp", wall + 5, qp=qp, qpn=qpn, state="INIT", ret=0,
                          qp_access=["REMOTE_WRITE", "REMOTE_READ", "REMOTE_ATOMIC"]),
                self.verb("modify_qp", wall + 10, qp=qp, qpn=qpn, state="RTR", dest_qpn=peer_qpn,
                          peer_ip=peer_ip, rq_psn=0, ret=0),
                self.verb("modify_qp", wall + 20, qp=qp, qpn=qpn, state="RTS", sq_psn=sq_psn, ret=0)]


CLIENT1 = Proc("hA", 100, HOSTILE_COMM, 7, "10.0.0.1")
CLIENT2 = Proc(HOSTILE_HOST, 500, "victim", 11, "10.0.0.3")
SERVER = Proc("hB", 300, "server", 9, "10.0.0.2")


def write(proc, qp, qpn, dst_qpn, psn, wr_id, t_first, net_ns):
    """A WRITE's post, wire message and completion: host 1 us, completion 1 us."""
    va = MR_BASE + (wr_id % 16) * 4096
    post = proc.verb("post_send", t_first - 1000, qp=qp, qpn=qpn, wr_id=wr_id, opcode="RDMA_WRITE",
                     signaled=True, send_flags=2, num_sge=1, len=4096, remote_addr=va, rkey=77, imm=None,
                     chain_index=0, truncated=False)
    poll = proc.verb("poll_cq", t_first + net_ns + 1000, cq="0x3", qpn=qpn, wr_id=wr_id,
                     status="SUCCESS", status_code=0, opcode="RDMA_WRITE", byte_len=0, imm=None, src_qp=0,
                     wc_flags=0, index=0, polled=1)
    msg = {"type": "msg", "src_ip": proc.ip, "dst_ip": SERVER.ip, "dst_qpn": dst_qpn, "src_qpn": qpn,
           "op": "WRITE", "imm": None, "inv": None, "psn_first": psn, "psn_last": psn, "pkts": 1, "bytes": 4096, "va": va,
           "rkey": 77, "dma_len": 4096, "t_first_ns": t_first, "t_last_ns": t_first,
           "t_ack_ns": t_first + net_ns, "retx_pkts": 0, "naks": 0, "rnr_naks": 0, "status": "ok"}
    return [post, poll], msg


def records(attack=True):
    """(dataplane records, host records) as lists of dicts."""
    host = (CLIENT1.connect(T0 - 10**6, "0xa0", 17, SERVER.ip, 50, 1000) +
            CLIENT2.connect(T0 - 10**6, "0xc0", 30, SERVER.ip, 60, 5000) +
            SERVER.connect(T0 - 10**6, "0xd0", 50, CLIENT1.ip, 17, 0) +
            SERVER.connect(T0 - 10**6, "0xd8", 60, CLIENT2.ip, 30, 0))
    host.append(SERVER.verb("reg_mr", T0 - 2 * 10**6, mr="0xe0", pd="0x2000", addr=MR_BASE,
                            length=1 << 20, iova=MR_BASE, access=2 | 4 | 8, lkey=77, rkey=77, ret=0))
    dp = []
    psn = 1000
    for k in range(300):
        h, m = write(CLIENT1, "0xa0", 17, 50, psn, k, T0 + k * 10**6, 5000)
        host += h
        dp.append(m)
        psn += 1
    for k in range(20):
        t = T0 + 400 * 10**6 + k * 10**6
        h, m = write(CLIENT1, "0xa0", 17, 50, psn, 300 + k, t, 205_000)
        host += h
        dp.append(m)
        psn += 1
        h, m = write(CLIENT2, "0xc0", 30, 60, 5000 + k, k, t + 1000, 210_000)
        host += h
        dp.append(m)
    if attack:
        t = T0 + 500 * 10**6
        dp.append({"type": "msg", "src_ip": "10.0.0.9", "dst_ip": SERVER.ip, "dst_qpn": 50,
                   "src_qpn": None, "op": "WRITE", "imm": None, "inv": None, "psn_first": 77, "psn_last": 77, "pkts": 1,
                   "bytes": 64, "va": MR_BASE, "rkey": 99, "dma_len": 64, "t_first_ns": t,
                   "t_last_ns": t, "t_ack_ns": t + 4000, "retx_pkts": 0, "naks": 0, "rnr_naks": 0,
                   "status": "nak_access"})
    return dp, host


def write_inputs(directory, attack=True):
    """Writes dp.jsonl and trace.jsonl into `directory`; returns their paths."""
    import os
    dp, host = records(attack)
    paths = (os.path.join(directory, "dp.jsonl"), os.path.join(directory, "trace.jsonl"))
    for path, recs in zip(paths, (dp, host)):
        with open(path, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in recs)
    return paths


# What the page made from these records draws (chart id -> data points), hand-derived:
# - CDFs: client 1 has 320 messages -> 200 ranks x 3 parts; client 2 has 20 -> 20 x 3.
# - network latency: 1 ms bins would span T0 .. T0 + 419 ms (>= 400 bins), so they are 2 ms:
#   client 1 fills bins 0-149 and 200-209, client 2 bins 200-209: 170 points.
# - alerts: rkey_unknown and peer_mismatch.
EXPECTED_CHARTS = {"chart-cdf-0": 600, "chart-cdf-1": 60, "chart-net": 170, "chart-alerts": 2}

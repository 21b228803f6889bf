#!/usr/bin/env python3
"""insert-dp's `msg` origin fields against tshark: every message's `src_mac` and `ttl` are
those of the packet that opened it (docs/semantics.md "Messages": its First/Only, READ
request or atomic - the first observed), and `port` is null in replay.

The bundled captures have one MAC and one TTL per host, which would not tell a message's
opening packet from its others. So each capture is first rewritten: frame N gets the
source MAC 02:4f:00:00:HH:LL (N = 0xHHLL) and the TTL / hop limit 1 + N % 254 (the IPv4
header checksum fixed; the ICRC does not cover either). insert-dp replays the copy, and
tshark decodes it: for each `msg` record, the earliest frame at or after its t_first_ns from
its src_ip to (dst_ip, dst_qpn) with its psn_first and an opcode that opens a message must
carry the record's src_mac and ttl.

usage: msg_origin_vs_tshark.py INSERT_DP CAPTURE...
"""
import decimal
import json
import os
import struct
import subprocess
import sys
import tempfile

# Opcodes that open a message (low 5 bits; RC 0x00, UC 0x20, XRC 0xA0 families): SEND
# First/Only/Only+Imm/Only+Inv, WRITE First/Only/Only+Imm, READ request, CmpSwap, FetchAdd.
OPENERS = {0x00, 0x04, 0x05, 0x17, 0x06, 0x0A, 0x0B, 0x0C, 0x13, 0x14}
FAMILIES = {0x00, 0x20, 0xA0}


def frame_spans(data):
    """(offset, length) of every frame of a pcap or pcapng file, in file order."""
    magic = data[:4]
    spans = []
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        end = "<" if magic[0] in (0xD4, 0x4D) else ">"
        pos = 24
        while pos + 16 <= len(data):
            incl = struct.unpack_from(end + "I", data, pos + 8)[0]
            spans.append((pos + 16, incl))
            pos += 16 + incl
        return spans
    if magic == b"\x0a\x0d\x0d\x0a":
        pos, end = 0, "<"
        while pos + 12 <= len(data):
            if data[pos:pos + 4] == b"\x0a\x0d\x0d\x0a":
                end = "<" if data[pos + 8:pos + 12] == b"\x4d\x3c\x2b\x1a" else ">"
            btype, blen = struct.unpack_from(end + "II", data, pos)
            if btype == 6:
                spans.append((pos + 28, struct.unpack_from(end + "I", data, pos + 20)[0]))
            pos += blen
        return spans
    raise ValueError("not a pcap or pcapng file")


def ip_header(frame):
    """(offset, version) of the IP header after up to two VLAN tags, or None."""
    off = 12
    while off + 2 <= len(frame) and frame[off:off + 2] in (b"\x81\x00", b"\x88\xa8"):
        off += 4
    if off + 2 > len(frame):
        return None
    etype = frame[off:off + 2]
    return (off + 2, 4) if etype == b"\x08\x00" else (off + 2, 6) if etype == b"\x86\xdd" else None


def rewrite(src, dst):
    data = bytearray(open(src, "rb").read())
    for n, (at, length) in enumerate(frame_spans(data)):
        frame = memoryview(data)[at:at + length]
        frame[6:12] = bytes([0x02, 0x4F, 0, 0, (n >> 8) & 0xFF, n & 0xFF])
        ip = ip_header(frame)
        if ip is None:
            continue
        off, version = ip
        ttl = 1 + n % 254
        if version == 6:
            frame[off + 7] = ttl
            continue
        frame[off + 8] = ttl
        ihl = (frame[off] & 0x0F) * 4
        frame[off + 10:off + 12] = b"\0\0"
        total = sum(struct.unpack(f">{ihl // 2}H", bytes(frame[off:off + ihl])))
        while total >> 16:
            total = (total & 0xFFFF) + (total >> 16)
        frame[off + 10:off + 12] = struct.pack(">H", ~total & 0xFFFF)
    open(dst, "wb").write(data)


def tshark_frames(path):
    fields = ["frame.time_epoch", "eth.src", "ip.ttl", "ipv6.hlim", "ip.src", "ipv6.src",
              "ip.dst", "ipv6.dst", "infiniband.bth.destqp", "infiniband.bth.psn",
              "infiniband.bth.opcode"]
    out = subprocess.run(["tshark", "-r", path, "-d", "udp.port==4791,infiniband", "-T", "fields",
                          "-E", "occurrence=f", *sum((["-e", f] for f in fields), [])],
                         check=True, capture_output=True, text=True).stdout
    frames = []
    for line in out.splitlines():
        epoch, mac, ttl4, hlim, src4, src6, dst4, dst6, qpn, psn, opcode = line.split("\t")
        if not opcode:
            continue
        t = int(decimal.Decimal(epoch) * 1_000_000_000)
        frames.append({"t": t, "mac": mac, "ttl": int(ttl4 or hlim), "src": src4 or src6,
                       "dst": dst4 or dst6, "qpn": int(qpn, 0), "psn": int(psn, 0),
                       "opcode": int(opcode, 0)})
    return frames


def opener(f):
    return (f["opcode"] & 0xE0) in FAMILIES and (f["opcode"] & 0x1F) in OPENERS


def check(insert_dp, capture, tmp):
    copy = os.path.join(tmp, "origin-" + os.path.basename(capture))
    rewrite(capture, copy)
    records = os.path.join(tmp, "records.jsonl")
    subprocess.run([insert_dp, "replay", copy, "--quiet", "--records", records], check=True,
                   capture_output=True)
    msgs = [r for r in map(json.loads, open(records)) if r["type"] == "msg"]
    frames = [f for f in tshark_frames(copy) if opener(f)]
    problems = []
    macs, ttls = set(), set()
    for m in msgs:
        # IPv6 text from both sides is canonical (RFC 5952) and lower case.
        found = [f for f in frames if f["src"] == m["src_ip"] and f["dst"] == m["dst_ip"]
                 and f["qpn"] == m["dst_qpn"] and f["psn"] == m["psn_first"]
                 and f["t"] >= m["t_first_ns"]]
        if not found:
            problems.append(f"no opening frame for {m}")
            continue
        want = min(found, key=lambda f: f["t"])
        got = (m.get("src_mac"), m.get("ttl"), m.get("port", "absent"))
        if got != (want["mac"], want["ttl"], None):
            problems.append(f"msg {m['dst_ip']}/{m['dst_qpn']} psn {m['psn_first']}: "
                            f"(src_mac, ttl, port) {got}, tshark's opening frame "
                            f"({want['mac']}, {want['ttl']}) and port null")
        macs.add(m.get("src_mac"))
        ttls.add(m.get("ttl"))
    if not msgs:
        problems.append("no msg records")
    return problems, len(msgs), len(macs), len(ttls)


def main():
    insert_dp, captures = sys.argv[1], sys.argv[2:]
    failed = 0
    with tempfile.TemporaryDirectory(prefix="insert-origin-") as tmp:
        for capture in captures:
            problems, n, macs, ttls = check(insert_dp, capture, tmp)
            for p in problems[:10]:
                print(f"FAIL: {os.path.basename(capture)}: {p}")
            failed += bool(problems)
            print(f"{os.path.basename(capture)}: {n} msg records, {macs} distinct MACs and "
                  f"{ttls} TTLs, {len(problems)} problems")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

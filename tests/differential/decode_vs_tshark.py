#!/usr/bin/env python3
"""Differential test: `insert-dp decode` against Wireshark's InfiniBand dissector.

For every capture given (and every path in the INSERT_DIFF_PCAPS environment variable,
separated by ':' or whitespace) this script

1. runs `insert-dp decode FILE` and reads its CSV;
2. classifies every frame with an independent reading of SPEC.md section 1 written here
   (own pcap/pcapng reader, own header walk, own opcode table), and requires the set of
   CSV rows to be exactly the frames it finds well-formed RoCE;
3. runs `tshark -T fields` with `-d udp.port==4791,infiniband` plus one
   `-d udp.port==P,infiniband` per UDP source port P < 4791 of a RoCE packet (otherwise
   tshark dissects e.g. source port 69 as TFTP), and compares every CSV cell of every row
   with what tshark printed;
4. with --check-icrc (used for the bundled pcaps, which the builder wrote), recomputes the
   ICRC of every RoCE packet with zlib.crc32 over the masked bytes and requires it to equal
   the ICRC tshark shows.

Where tshark 4.0 is silent the value is checked against another source, as
docs/decode.md lists: FECN/BECN come from BTH byte 4, which tshark prints as the
`infiniband.reserved` field (and which is checked against the raw byte too); XRC and CNP
headers after the BTH are only shown as `infiniband.vendor` bytes and are decoded from
those bytes here; atomics show their AtomicETH VA/R_Key under infiniband.reth.* while
SPEC.md leaves reth_* empty for them.

Exit status 0 when every RoCE packet of every capture agrees, 1 otherwise.
"""

import argparse
import csv
import io
import ipaddress
import os
import struct
import subprocess
import sys
import zlib

CSV_HEADER = ("frame,src_ip,dst_ip,sport,opcode,dest_qp,psn,ack_req,se,pad,pkey,fecn,becn,"
              "reth_va,reth_rkey,reth_len,aeth_syndrome,aeth_msn,imm,ieth_rkey,deth_qkey,"
              "deth_src_qp,payload_len")

ROCE_PORT = 4791

# ---------------------------------------------------------------------------------------
# Capture files


def read_capture(path):
    """Returns the list of frames (bytes) of a pcap or pcapng file, in file order."""
    with open(path, "rb") as f:
        data = f.read()
    magic = data[:4]
    frames = []
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\xc3\xd4",
                 b"\xa1\xb2\x3c\x4d"):
        end = "<" if magic[0] in (0xD4, 0x4D) else ">"
        pos = 24
        while pos + 16 <= len(data):
            incl = struct.unpack_from(end + "I", data, pos + 8)[0]
            if pos + 16 + incl > len(data):
                break
            frames.append(data[pos + 16:pos + 16 + incl])
            pos += 16 + incl
        return frames
    if magic == b"\x0a\x0d\x0d\x0a":
        pos = 0
        end = "<"
        while pos + 12 <= len(data):
            if data[pos:pos + 4] == b"\x0a\x0d\x0d\x0a":
                end = "<" if data[pos + 8:pos + 12] == b"\x4d\x3c\x2b\x1a" else ">"
            btype, blen = struct.unpack_from(end + "II", data, pos)
            if blen < 12 or pos + blen > len(data):
                break
            body = data[pos + 8:pos + blen - 4]
            if btype == 6:
                caplen = struct.unpack_from(end + "I", body, 12)[0]
                frames.append(body[20:20 + caplen])
            elif btype == 2:
                caplen = struct.unpack_from(end + "I", body, 12)[0]
                frames.append(body[20:20 + caplen])
            elif btype == 3:
                orig = struct.unpack_from(end + "I", body, 0)[0]
                frames.append(body[4:4 + min(orig, len(body) - 4)])
            pos += blen
        return frames
    raise ValueError(f"{path}: not a pcap or pcapng file")


# ---------------------------------------------------------------------------------------
# Independent reading of SPEC.md section 1

RETH, AETH, ATOMIC_ETH, ATOMIC_ACK_ETH, IMM, IETH, DETH, XRCETH, CNP_PAD = (
    "reth", "aeth", "atomiceth", "atomicacketh", "immdt", "ieth", "deth", "xrceth", "cnp")
HEADER_BYTES = {RETH: 16, AETH: 4, ATOMIC_ETH: 28, ATOMIC_ACK_ETH: 8, IMM: 4, IETH: 4,
                DETH: 8, XRCETH: 4, CNP_PAD: 16}

# IBTA vol.1 table 38/ch.9.4: headers after the BTH by the low 5 bits of an RC/UC/XRC
# opcode, in wire order (XRCETH and DETH come first when present).
RC_LAYOUT = {
    0x00: [], 0x01: [], 0x02: [], 0x03: [IMM], 0x04: [], 0x05: [IMM],
    0x06: [RETH], 0x07: [], 0x08: [], 0x09: [IMM], 0x0A: [RETH], 0x0B: [RETH, IMM],
    0x0C: [RETH], 0x0D: [AETH], 0x0E: [], 0x0F: [AETH], 0x10: [AETH], 0x11: [AETH],
    0x12: [AETH, ATOMIC_ACK_ETH], 0x13: [ATOMIC_ETH], 0x14: [ATOMIC_ETH],
    0x16: [IETH], 0x17: [IETH],
}
RESPONSES = {0x0D, 0x0E, 0x0F, 0x10, 0x11, 0x12}


def layout(opcode):
    """Extension headers of a defined opcode, or None for a reserved one."""
    family, low = opcode & 0xE0, opcode & 0x1F
    if family == 0x00 and low in RC_LAYOUT:
        return RC_LAYOUT[low]
    if family == 0x20 and low <= 0x0B:
        return RC_LAYOUT[low]
    if opcode == 0x64:
        return [DETH]
    if opcode == 0x65:
        return [DETH, IMM]
    if opcode == 0x81:
        return [CNP_PAD]
    if family == 0xA0 and low in RC_LAYOUT:
        return ([] if low in RESPONSES else [XRCETH]) + RC_LAYOUT[low]
    return None


def be16(b, o):
    return (b[o] << 8) | b[o + 1]


def be24(b, o):
    return (b[o] << 16) | (b[o + 1] << 8) | b[o + 2]


def be32(b, o):
    return struct.unpack_from(">I", b, o)[0]


def be64(b, o):
    return struct.unpack_from(">Q", b, o)[0]


def classify(b):
    """('roce', info) | ('malformed', reason) | ('non_roce', None)."""
    if len(b) < 14:
        return "non_roce", None
    off, tags = 12, 0
    etype = be16(b, off)
    while etype in (0x8100, 0x88A8):
        if tags == 2 or len(b) < off + 6:
            return "non_roce", None
        off += 4
        tags += 1
        etype = be16(b, off)
    l3 = off + 2
    info = {"l3": l3, "ipv6": etype == 0x86DD}
    if etype == 0x0800:
        if len(b) < l3 + 20 or b[l3] >> 4 != 4:
            return "non_roce", None
        ihl = (b[l3] & 0x0F) * 4
        if ihl < 20 or len(b) < l3 + ihl or b[l3 + 9] != 17:
            return "non_roce", None
        flags_frag = be16(b, l3 + 6)
        if flags_frag & 0x2000 or flags_frag & 0x1FFF:
            return "non_roce", None
        total = be16(b, l3 + 2)
        l4 = l3 + ihl
        ip_payload = total - ihl
        beyond = l3 + total > len(b)
        info["src"] = ipaddress.IPv4Address(b[l3 + 12:l3 + 16])
        info["dst"] = ipaddress.IPv4Address(b[l3 + 16:l3 + 20])
    elif etype == 0x86DD:
        if len(b) < l3 + 40 or b[l3] >> 4 != 6:
            return "non_roce", None
        payload_len = be16(b, l3 + 4)
        nxt, hdr, count = b[l3 + 6], l3 + 40, 0
        while nxt != 17:
            # The C++ parser walks at most 8 extension headers; so does this reading.
            if count == 8 or len(b) < hdr + 8:
                return "non_roce", None
            if nxt in (0, 43, 60):
                size = (b[hdr + 1] + 1) * 8
            elif nxt == 51:
                size = (b[hdr + 1] + 2) * 4
            elif nxt == 44:
                if be16(b, hdr + 2) != 0:  # offset, reserved bits or M: a fragment
                    return "non_roce", None
                size = 8
            else:
                return "non_roce", None
            if len(b) < hdr + size:
                return "non_roce", None
            nxt, hdr, count = b[hdr], hdr + size, count + 1
        l4 = hdr
        ip_payload = payload_len - (hdr - l3 - 40)
        beyond = l3 + 40 + payload_len > len(b)
        info["src"] = ipaddress.IPv6Address(b[l3 + 8:l3 + 24])
        info["dst"] = ipaddress.IPv6Address(b[l3 + 24:l3 + 40])
    else:
        return "non_roce", None
    if len(b) < l4 + 8 or be16(b, l4 + 2) != ROCE_PORT:
        return "non_roce", None
    udp_len = be16(b, l4 + 4)
    if beyond or udp_len != ip_payload:
        return "malformed", "length_mismatch"
    if udp_len < 8 + 12:
        return "malformed", "truncated"
    bth = l4 + 8
    opcode = b[bth]
    headers = layout(opcode)
    if headers is None:
        return "malformed", "reserved_opcode"
    pad = (b[bth + 1] >> 4) & 3
    ext = sum(HEADER_BYTES[h] for h in headers)
    payload = udp_len - 8 - 12 - ext - pad - 4
    if payload < 0:
        return "malformed", "truncated"
    info.update(l4=l4, bth=bth, udp_len=udp_len, opcode=opcode, headers=headers,
                payload_len=payload, icrc_offset=l4 + udp_len - 4, sport=be16(b, l4))
    return "roce", info


def icrc(b, info):
    """RoCEv2 ICRC (IBTA annex A17.3.3) with zlib's CRC-32, as a 32-bit integer."""
    l3, l4, bth = info["l3"], info["l4"], info["bth"]
    ip = bytearray(b[l3:l4])
    if info["ipv6"]:
        ip[0] |= 0x0F          # traffic class (high nibble)
        ip[1] = 0xFF           # traffic class (low nibble), flow label
        ip[2] = ip[3] = 0xFF   # flow label
        ip[7] = 0xFF           # hop limit
    else:
        ip[1] = 0xFF           # TOS
        ip[8] = 0xFF           # TTL
        ip[10] = ip[11] = 0xFF  # header checksum
    udp = bytearray(b[l4:l4 + 8])
    udp[6] = udp[7] = 0xFF
    bth_bytes = bytearray(b[bth:bth + 12])
    bth_bytes[4] = 0xFF
    rest = b[bth + 12:info["icrc_offset"]]
    return zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(bth_bytes) + rest)


def decode_headers(hexbytes, headers):
    """Decodes extension headers from the bytes tshark printed after the BTH."""
    raw = bytes.fromhex(hexbytes.replace(":", ""))
    out, pos = {}, 0
    for h in headers:
        if pos + HEADER_BYTES[h] > len(raw):
            return None, raw
        if h == RETH:
            out["reth_va"], out["reth_rkey"], out["reth_len"] = (
                be64(raw, pos), be32(raw, pos + 8), be32(raw, pos + 12))
        elif h == AETH:
            out["aeth_syndrome"], out["aeth_msn"] = raw[pos], be24(raw, pos + 1)
        elif h == IMM:
            out["imm"] = be32(raw, pos)
        elif h == IETH:
            out["ieth_rkey"] = be32(raw, pos)
        elif h == DETH:
            out["deth_qkey"], out["deth_src_qp"] = be32(raw, pos), be24(raw, pos + 5)
        pos += HEADER_BYTES[h]
    return out, raw


# ---------------------------------------------------------------------------------------
# tshark

TSHARK_FIELDS = [
    "frame.number", "ip.src", "ip.dst", "ipv6.src", "ipv6.dst", "udp.srcport", "udp.dstport",
    "udp.length", "infiniband.bth.opcode", "infiniband.bth.se", "infiniband.bth.padcnt",
    "infiniband.bth.p_key", "infiniband.bth.destqp", "infiniband.bth.a", "infiniband.bth.psn",
    "infiniband.reserved", "infiniband.reth", "infiniband.reth.va", "infiniband.reth.r_key",
    "infiniband.reth.dmalen", "infiniband.aeth", "infiniband.aeth.syndrome",
    "infiniband.aeth.msn", "infiniband.atomiceth", "infiniband.atomicacketh",
    "infiniband.immdt", "infiniband.ieth", "infiniband.deth", "infiniband.deth.q_key",
    "infiniband.deth.srcqp", "infiniband.vendor", "infiniband.invariant.crc", "data.len",
]


def run_tshark(path, ports):
    cmd = ["tshark", "-n", "-r", path]
    # Wireshark's UDP dissector tries the lower of the two ports first, so only source
    # ports below 4791 can be taken by another protocol; forcing only those keeps the
    # command line short on captures with thousands of entropy ports.
    for port in sorted({p for p in ports if p < ROCE_PORT} | {ROCE_PORT}):
        cmd += ["-d", f"udp.port=={port},infiniband"]
    cmd += ["-T", "fields", "-E", "separator=/t", "-E", "occurrence=a", "-E",
            "aggregator=|"]
    for field in TSHARK_FIELDS:
        cmd += ["-e", field]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"tshark failed on {path}: {proc.stderr.strip()}")
    result = {}
    for line in proc.stdout.splitlines():
        cells = line.split("\t")
        row = {f: [v for v in c.split("|") if v != ""] for f, c in zip(TSHARK_FIELDS, cells)}
        result[int(row["frame.number"][0])] = row
    return result


def first(row, field):
    values = row.get(field, [])
    return values[0] if values else None


def as_int(text):
    if text is None:
        return None
    text = text.strip()
    if text.startswith("0x"):
        return int(text, 16)
    return int(text)


def hex_bytes_int(text):
    return None if text is None else int(text.replace(":", ""), 16)


def tshark_bool(text):
    return {"1": 1, "0": 0, "True": 1, "False": 0}[text]


# ---------------------------------------------------------------------------------------
# Comparison


def expected_from_tshark(row, frame_bytes, info):
    """The CSV cells as tshark (or, where it is silent, the raw bytes) shows them."""
    e = {}
    src = first(row, "ip.src") or first(row, "ipv6.src")
    dst = first(row, "ip.dst") or first(row, "ipv6.dst")
    e["src_ip"] = ipaddress.ip_address(src)
    e["dst_ip"] = ipaddress.ip_address(dst)
    e["sport"] = as_int(first(row, "udp.srcport"))
    opcode = as_int(first(row, "infiniband.bth.opcode"))
    e["opcode"] = opcode
    e["dest_qp"] = as_int(first(row, "infiniband.bth.destqp"))
    e["psn"] = as_int(first(row, "infiniband.bth.psn"))
    e["ack_req"] = tshark_bool(first(row, "infiniband.bth.a"))
    e["se"] = tshark_bool(first(row, "infiniband.bth.se"))
    pad = as_int(first(row, "infiniband.bth.padcnt"))
    e["pad"] = pad
    e["pkey"] = as_int(first(row, "infiniband.bth.p_key"))
    # tshark 4.0 has no FECN/BECN fields: BTH byte 4 is its first infiniband.reserved.
    byte4 = hex_bytes_int(first(row, "infiniband.reserved"))
    if byte4 != frame_bytes[info["bth"] + 4]:
        raise AssertionError(f"tshark's BTH byte 4 {byte4} != raw {frame_bytes[info['bth'] + 4]}")
    e["fecn"], e["becn"] = (byte4 >> 7) & 1, (byte4 >> 6) & 1

    vendor = row.get("infiniband.vendor", [])
    udp_len = as_int(first(row, "udp.length"))
    if vendor:
        # tshark 4.0 does not know the headers after the BTH (XRC, CNP): it prints them,
        # payload, pad and ICRC as vendor bytes; decode them with the IBTA layout.
        headers = layout(opcode)
        decoded, raw = decode_headers(max(vendor, key=len), headers)
        if decoded is None:
            raise AssertionError("vendor bytes shorter than the opcode's headers")
        e.update(decoded)
        e["payload_len"] = len(raw) - sum(HEADER_BYTES[h] for h in headers) - pad - 4
        ext = 0
    else:
        present = []
        if row.get("infiniband.reth"):
            present.append(RETH)
            e["reth_va"] = as_int(first(row, "infiniband.reth.va"))
            e["reth_rkey"] = as_int(first(row, "infiniband.reth.r_key"))
            e["reth_len"] = as_int(first(row, "infiniband.reth.dmalen"))
        if row.get("infiniband.atomiceth"):
            present.append(ATOMIC_ETH)
            # tshark shows the AtomicETH VA and R_Key as infiniband.reth.va/.r_key;
            # SPEC.md section 8 leaves reth_* empty for atomics in v1.
            for k in ("reth_va", "reth_rkey", "reth_len"):
                e.pop(k, None)
        if row.get("infiniband.aeth"):
            present.append(AETH)
            e["aeth_syndrome"] = as_int(first(row, "infiniband.aeth.syndrome"))
            e["aeth_msn"] = as_int(first(row, "infiniband.aeth.msn"))
        if row.get("infiniband.atomicacketh"):
            present.append(ATOMIC_ACK_ETH)
        if row.get("infiniband.immdt"):
            present.append(IMM)
            e["imm"] = hex_bytes_int(first(row, "infiniband.immdt"))
        if row.get("infiniband.ieth"):
            present.append(IETH)
            e["ieth_rkey"] = hex_bytes_int(first(row, "infiniband.ieth"))
        if row.get("infiniband.deth"):
            present.append(DETH)
            e["deth_qkey"] = as_int(first(row, "infiniband.deth.q_key"))
            e["deth_src_qp"] = as_int(first(row, "infiniband.deth.srcqp"))
        ext = sum(HEADER_BYTES[h] for h in present)
        # Payload: UDP length less the headers tshark found, pad and ICRC. Where tshark
        # hands the payload to its data dissector, data.len (payload + pad) must agree.
        e["payload_len"] = udp_len - 8 - 12 - ext - pad - 4
        data_len = as_int(first(row, "data.len"))
        if data_len is not None and data_len != e["payload_len"] + pad:
            raise AssertionError(f"tshark data.len {data_len} != payload {e['payload_len']} "
                                 f"+ pad {pad}")
    return e


INT_COLUMNS = ["sport", "opcode", "dest_qp", "psn", "ack_req", "se", "pad", "pkey", "fecn",
               "becn", "reth_va", "reth_rkey", "reth_len", "aeth_syndrome", "aeth_msn", "imm",
               "ieth_rkey", "deth_qkey", "deth_src_qp", "payload_len"]


def ours(csv_row):
    o = {"src_ip": ipaddress.ip_address(csv_row["src_ip"]),
         "dst_ip": ipaddress.ip_address(csv_row["dst_ip"])}
    for c in INT_COLUMNS:
        o[c] = int(csv_row[c]) if csv_row[c] != "" else None
    return o


def check_file(path, insert_dp, check_icrc):
    errors = []
    proc = subprocess.run([insert_dp, "decode", path], capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        return [f"insert-dp decode exited {proc.returncode}: {proc.stderr.strip()}"], 0
    lines = proc.stdout.splitlines()
    if not lines or lines[0] != CSV_HEADER:
        return [f"unexpected CSV header: {lines[:1]}"], 0
    rows = {int(r["frame"]): r for r in csv.DictReader(io.StringIO(proc.stdout))}

    frames = read_capture(path)
    verdicts = [classify(f) for f in frames]
    roce = {i + 1 for i, (v, _) in enumerate(verdicts) if v == "roce"}
    for n in sorted(set(rows) - roce):
        errors.append(f"frame {n}: decoded, but not well-formed RoCE by SPEC "
                      f"({verdicts[n - 1][0]} {verdicts[n - 1][1] or ''})")
    for n in sorted(roce - set(rows)):
        errors.append(f"frame {n}: well-formed RoCE by SPEC, but no CSV row")

    ports = {verdicts[n - 1][1]["sport"] for n in roce}
    tshark = run_tshark(path, ports)
    compared = 0
    for n in sorted(roce & set(rows)):
        info = verdicts[n - 1][1]
        row = tshark.get(n)
        if row is None or first(row, "infiniband.bth.opcode") is None:
            errors.append(f"frame {n}: tshark did not dissect it as InfiniBand")
            continue
        try:
            want = expected_from_tshark(row, frames[n - 1], info)
        except (AssertionError, KeyError, ValueError) as exc:
            errors.append(f"frame {n}: {exc}")
            continue
        got = ours(rows[n])
        for column in ["src_ip", "dst_ip"] + INT_COLUMNS:
            if got[column] != want.get(column):
                errors.append(f"frame {n}: {column}: insert-dp {got[column]!r}, "
                              f"tshark {want.get(column)!r}")
        if check_icrc:
            # The ICRC is carried least significant byte first; tshark prints the four
            # bytes as one big-endian number (and none when a payload heuristic
            # dissector threw on an empty SEND before it got there).
            wire = struct.unpack_from("<I", frames[n - 1], info["icrc_offset"])[0]
            computed = icrc(frames[n - 1], info)
            shown = first(row, "infiniband.invariant.crc")
            if computed != wire:
                errors.append(f"frame {n}: ICRC on the wire {wire:#010x}, zlib {computed:#010x}")
            shown_wire = struct.unpack_from(">I", frames[n - 1], info["icrc_offset"])[0]
            if shown is not None and as_int(shown) != shown_wire:
                errors.append(f"frame {n}: tshark ICRC {shown}, wire bytes {shown_wire:#010x}")
        compared += 1
    return errors, compared


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--insert-dp", required=True, help="path of the insert-dp binary")
    parser.add_argument("--check-icrc", action="store_true",
                        help="also verify the ICRC of every RoCE packet (builder-made pcaps)")
    parser.add_argument("--pcap-dir", action="append", default=[],
                        help="also compare every *.pcap and *.pcapng in this directory "
                             "(without the ICRC check unless listed explicitly)")
    parser.add_argument("pcaps", nargs="*")
    args = parser.parse_args()
    paths = list(args.pcaps)
    known = {os.path.realpath(p) for p in paths}
    extra_paths = []
    for d in args.pcap_dir:
        for name in sorted(os.listdir(d)):
            full = os.path.join(d, name)
            if name.endswith((".pcap", ".pcapng")) and os.path.realpath(full) not in known:
                extra_paths.append(full)
    extra = os.environ.get("INSERT_DIFF_PCAPS", "")
    extra_paths += [p for p in extra.replace(":", " ").split() if p]
    if not paths and not extra_paths:
        print("decode_vs_tshark: no capture given", file=sys.stderr)
        return 1
    failed = 0
    total = 0
    for path, icrc_check in [(p, args.check_icrc) for p in paths] + [(p, False)
                                                                     for p in extra_paths]:
        errors, compared = check_file(path, args.insert_dp, icrc_check)
        total += compared
        if compared == 0 and not errors:
            errors = ["no RoCE packet compared"]
        status = "ok" if not errors else "FAILED"
        print(f"{path}: {compared} RoCE packets compared with tshark: {status}")
        for e in errors[:50]:
            print(f"  {e}")
        if len(errors) > 50:
            print(f"  ... {len(errors) - 50} more")
        failed += bool(errors)
    print(f"{len(paths) + len(extra_paths) - failed} passed, {failed} failed "
          f"({total} packets)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

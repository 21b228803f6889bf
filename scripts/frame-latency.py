#!/usr/bin/env python3
"""One-way latency of frames through a bump in the wire between two network namespaces.

    frame-latency.py NS_A IF_A NS_B IF_B [COUNT]

Sends COUNT RoCEv2-sized UDP/4791 frames one at a time from IF_A (in NS_A) and waits for
each on IF_B (in NS_B); prints the median and 99th percentile of send-to-receive time in
microseconds. One process, two AF_PACKET sockets opened after setns(2) into each namespace,
so both timestamps come from one clock. Run as root.
"""
import ctypes
import os
import socket
import struct
import sys
import time

CLONE_NEWNET = 0x40000000
libc = ctypes.CDLL("libc.so.6", use_errno=True)


def socket_in(ns, ifname):
    fd = os.open(f"/var/run/netns/{ns}", os.O_RDONLY)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "setns")
    os.close(fd)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    s.bind((ifname, 0))
    return s


def frame(seq):
    eth = bytes.fromhex("020000000002020000000001") + b"\x08\x00"
    payload = struct.pack("!Q", seq) + bytes(1016)
    udp = struct.pack("!HHHH", 49152, 4791, 8 + len(payload), 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp) + len(payload), 0, 0, 64, 17, 0,
                     bytes([10, 99, 0, 1]), bytes([10, 99, 0, 2]))
    return eth + ip + udp + payload


def main():
    ns_a, if_a, ns_b, if_b = sys.argv[1:5]
    count = int(sys.argv[5]) if len(sys.argv) > 5 else 1000
    own = os.open("/proc/self/ns/net", os.O_RDONLY)
    tx = socket_in(ns_a, if_a)
    rx = socket_in(ns_b, if_b)
    libc.setns(own, CLONE_NEWNET)
    rx.settimeout(1.0)
    lat = []
    for seq in range(count):
        f = frame(seq)
        t0 = time.perf_counter_ns()
        tx.send(f)
        while True:
            try:
                got = rx.recv(65536)
            except socket.timeout:
                got = None
                break
            if got[:len(f)] == f:
                break
        if got is not None:
            lat.append((time.perf_counter_ns() - t0) / 1000)
    lat.sort()
    if not lat:
        print("no frame crossed")
        sys.exit(1)
    print(f"{len(lat)}/{count} frames, one-way median {lat[len(lat) // 2]:.1f} us, "
          f"p99 {lat[int(len(lat) * 0.99) - 1]:.1f} us")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""`insert-dp decode` as a command: exact CSV rows, error handling (SPEC.md section 8),
truncated captures, --summary and --help. Usage: decode_cli_test.py INSERT_DP
(INSERT_SOURCE_ROOT names the source tree, for pcaps/)."""
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

INSERT_DP = None
ROOT = os.environ.get("INSERT_SOURCE_ROOT",
                      os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PCAPS = os.path.join(ROOT, "pcaps")

HEADER = ("frame,src_ip,dst_ip,sport,opcode,dest_qp,psn,ack_req,se,pad,pkey,fecn,becn,"
          "reth_va,reth_rkey,reth_len,aeth_syndrome,aeth_msn,imm,ieth_rkey,deth_qkey,"
          "deth_src_qp,payload_len")

# The IPv4 RC SEND Only vector of icrc_test.cpp, and an IPv6 WRITE First with one VLAN.
SEND_ONLY_V4 = bytes.fromhex(
    "0200000000020200000000010800456a003c00004000401126450a0000010a000002c00012b7002800000400"
    "ffff000000118000000130313233343536373839616263646566795a7393")
WRITE_FIRST_V6 = bytes.fromhex(
    "0200000000020200000000018100006486dd66a1234500301140fd0000000000000000000000000000"
    "01fd000000000000000000000000000002c35012b7003000000630800100abcdef00ffffff00007f00"
    "deadbeef0000123400000005303132333400000094055f80")


def pcap(frames, link_type=1):
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, link_type)
    for i, f in enumerate(frames):
        out += struct.pack("<IIII", 1_700_000_000 + i, 0, len(f), len(f)) + f
    return out


def pcapng(interfaces):
    """interfaces: list of (link_type, [frames]); each interface's frames follow its IDB."""
    def block(btype, body):
        body += b"\0" * (-len(body) % 4)
        n = 12 + len(body)
        return struct.pack("<II", btype, n) + body + struct.pack("<I", n)
    out = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    for idx, (link, frames) in enumerate(interfaces):
        out += block(1, struct.pack("<HHI", link, 0, 65535))
        for f in frames:
            out += block(6, struct.pack("<IIIII", idx, 0, 0, len(f), len(f)) + f)
    return out


def run(*args):
    return subprocess.run([INSERT_DP, "decode", *args], capture_output=True, text=True,
                          check=False)


class DecodeCommand(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="insert_decode_test_")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def write(self, name, data):
        path = os.path.join(self.tmp, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def assert_usage_error(self, proc, needle):
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertEqual(proc.stdout, "")
        self.assertEqual(len(proc.stderr.splitlines()), 1, proc.stderr)
        self.assertIn(needle, proc.stderr)

    def test_prints_exact_rows_for_hand_checked_packets(self):
        path = self.write("two.pcap", pcap([SEND_ONLY_V4, b"\x00" * 20, WRITE_FIRST_V6]))
        proc = run(path)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout.splitlines(), [
            HEADER,
            # SEND Only: QP 0x11, PSN 1, AckReq, 16 payload bytes, no extension headers.
            "1,10.0.0.1,10.0.0.2,49152,4,17,1,1,0,0,65535,0,0,,,,,,,,,,16",
            # Frame 2 is not RoCE. WRITE First: QP 0xABCDEF, PSN 0xFFFFFF, P_Key 0x8001,
            # RETH VA 0x7f00deadbeef, R_Key 0x1234, length 5; 5 payload bytes, pad 3.
            "3,fd00::1,fd00::2,50000,6,11259375,16777215,0,0,3,32769,0,0,139641712656111,"
            "4660,5,,,,,,,5",
        ])
        self.assertEqual(proc.stderr, "")

    def test_ipv6_packet_with_v4_mapped_address_prints_as_ipv6(self):
        frame = bytearray(WRITE_FIRST_V6)
        frame[26:42] = bytes(10) + b"\xff\xff" + bytes([10, 0, 0, 1])  # IPv6 source
        proc = run(self.write("mapped.pcap", pcap([bytes(frame)])))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertTrue(proc.stdout.splitlines()[1].startswith("1,::ffff:10.0.0.1,fd00::2,"),
                        proc.stdout)

    def test_bundled_rc_mixed_rows_match_the_conversation(self):
        proc = run(os.path.join(PCAPS, "rc_mixed.pcap"))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        rows = proc.stdout.splitlines()
        self.assertEqual(rows[0], HEADER)
        self.assertEqual(len(rows), 1 + 24)
        # CM REQ on QP 1 (UD SEND Only, GSI Q_Key 0x80010000, SrcQP 1, a 256-byte MAD).
        self.assertEqual(rows[1], "1,10.0.0.1,10.0.0.2,49152,100,1,1736193,0,0,0,65535,0,0,"
                                  ",,,,,,,2147549184,1,256")
        # WRITE First: RETH VA 0x7f3a12000000, R_Key 0x1f2e, 3000 bytes; 1024 in the packet.
        self.assertEqual(rows[4], "4,10.0.0.1,10.0.0.2,56238,6,282,1000,0,0,0,65535,0,0,"
                                  "139887386820608,7982,3000,,,,,,,1024")
        # ACK of PSN 1002: syndrome 0x1F (ACK, 31 credits), MSN 1, to QP 0x119.
        self.assertEqual(rows[7], "7,10.0.0.2,10.0.0.1,56238,17,281,1002,0,0,0,65535,0,0,"
                                  ",,,31,1,,,,,0")
        # SEND Last with Immediate 0xCAFE0001, SE.
        self.assertEqual(rows[11], "11,10.0.0.1,10.0.0.2,56238,3,282,1005,1,1,0,65535,0,0,"
                                   ",,,,,3405643777,,,,100")
        # WRITE Only with Immediate, 130 bytes: pad 2.
        self.assertEqual(rows[17], "17,10.0.0.1,10.0.0.2,56238,11,282,1009,1,0,2,65535,0,0,"
                                   "139887386824704,7982,130,,,7,,,,130")
        # FETCH_ADD: atomics leave reth_* empty (SPEC.md section 8).
        self.assertEqual(rows[19], "19,10.0.0.1,10.0.0.2,56238,20,282,1010,1,0,0,65535,0,0,"
                                   ",,,,,,,,,0")
        # SEND Only with Invalidate of R_Key 0x2a3b.
        self.assertEqual(rows[23], "23,10.0.0.1,10.0.0.2,56238,23,282,1012,1,0,0,65535,0,0,"
                                   ",,,,,,10811,,,32")

    def test_summary_counts_every_frame_on_stderr_and_keeps_stdout_csv(self):
        proc = run(os.path.join(PCAPS, "hostile.pcap"), "--summary")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertTrue(all(line[0].isdigit() for line in proc.stdout.splitlines()[1:]))
        self.assertEqual(len(proc.stdout.splitlines()), 1 + 4)
        self.assertEqual(proc.stderr.strip(), os.path.join(PCAPS, "hostile.pcap") +
                         ": 27 frames, 4 roce, 9 non_roce, 14 malformed (length_mismatch 5, "
                         "truncated 3, reserved_opcode 6)")

    def test_truncated_capture_prints_complete_frames_and_warns(self):
        with open(os.path.join(PCAPS, "rc_mixed.pcap"), "rb") as f:
            data = f.read()
        path = self.write("cut.pcap", data[:-10])
        proc = run(path)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(len(proc.stdout.splitlines()), 1 + 23)
        self.assertEqual(len(proc.stderr.splitlines()), 1)
        self.assertIn("warning", proc.stderr)
        self.assertIn(path, proc.stderr)

    def test_missing_file_is_exit_2_naming_it(self):
        path = os.path.join(self.tmp, "nope.pcap")
        self.assert_usage_error(run(path), path)

    def test_non_capture_is_exit_2_naming_it(self):
        path = self.write("text.pcap", b"hello, this is text and no capture at all\n")
        self.assert_usage_error(run(path), path)

    def test_wrong_link_type_is_exit_2(self):
        path = self.write("raw.pcap", pcap([SEND_ONLY_V4[14:]], link_type=101))
        proc = run(path)
        self.assert_usage_error(proc, path)
        self.assertIn("link type", proc.stderr)

    def test_late_non_ethernet_interface_writes_nothing_to_stdout(self):
        # Rows of the Ethernet interface come first; the cooked interface after them must
        # still fail the whole run with nothing half-written.
        path = self.write("mixed.pcapng",
                          pcapng([(1, [SEND_ONLY_V4] * 3), (113, [SEND_ONLY_V4[14:]])]))
        proc = run(path)
        self.assert_usage_error(proc, path)

    def test_bad_options_are_exit_2_naming_them(self):
        self.assert_usage_error(run("--bogus", os.path.join(PCAPS, "rc_mixed.pcap")),
                                "--bogus")
        self.assert_usage_error(run(), "missing FILE")
        self.assert_usage_error(run(os.path.join(PCAPS, "rc_mixed.pcap"),
                                    os.path.join(PCAPS, "cnp_ud.pcap")), "cnp_ud.pcap")

    def test_stdin_is_the_capture(self):
        # `tcpdump -w - | insert-dp decode -`: the rows of the file, pcap and pcapng.
        for name in ("rc_mixed.pcap", "ipv6_vlan.pcapng"):
            path = os.path.join(PCAPS, name)
            with open(path, "rb") as f:
                piped = subprocess.run([INSERT_DP, "decode", "-"], stdin=f, capture_output=True,
                                       text=True, check=False)
            self.assertEqual(piped.returncode, 0, piped.stderr)
            self.assertEqual(piped.stdout, run(path).stdout)
        empty = subprocess.run([INSERT_DP, "decode", "-"], input="", capture_output=True,
                               text=True, check=False)
        self.assert_usage_error(empty, "stdin: not a pcap or pcapng capture (too short)")

    def test_help_shows_usage_and_examples(self):
        proc = run("--help")
        self.assertEqual(proc.returncode, 0)
        self.assertIn("usage: insert-dp decode FILE", proc.stdout)
        self.assertIn("examples:", proc.stdout)
        self.assertIn("frame,src_ip,dst_ip,sport,opcode,dest_qp,psn", proc.stdout)


if __name__ == "__main__":
    INSERT_DP = sys.argv.pop(1)
    unittest.main(verbosity=2)

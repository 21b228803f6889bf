#!/usr/bin/env bash
# softverbs between two network namespaces over a veth pair (scripts/netns-softverbs.sh).
#
#   softverbs_netns_test.sh loopback             sv_peer between two processes on 127.0.0.1
#                                                and 127.0.0.2 (no namespaces, no root)
#   softverbs_netns_test.sh peer                 sv_peer: every verb checked on both sides
#   softverbs_netns_test.sh peer_loss            the same with 1% of packets dropped
#   softverbs_netns_test.sh perftest TOOL ARGS   unmodified perftest TOOL, captured with
#                                                tcpdump; the capture must decode in the
#                                                shared parser (ICRC), tshark and insert-dp
#   softverbs_netns_test.sh perftest_loss TOOL ARGS  TOOL with 1% loss: completes, and the
#                                                capture shows retransmissions
#   softverbs_netns_test.sh perftest_ecn ARGS    ib_write_bw with 5% of packets ECN-marked:
#                                                the receiver answers with CNPs
# INSERT_DP overrides the insert-dp binary used for the decode check.
# Needs root (exit 77 = skipped otherwise). Every step is bounded with timeout; the
# namespaces are deleted on exit whatever happens.
set -u
ROOT="${INSERT_SOURCE_ROOT:?}"
BUILD="${INSERT_BUILD_ROOT:?}"
SV_LIB_DIR="$BUILD/hosttrace/softverbs"
if [ "${1:-}" = loopback ]; then
    LD_LIBRARY_PATH="$SV_LIB_DIR" SOFTVERBS_IPS=127.0.0.1 timeout 60 \
        "$BUILD/tests/hosttrace/softverbs/sv_peer" server 18601 > /tmp/sv_peer_server.$$ 2>&1 &
    srv=$!
    LD_LIBRARY_PATH="$SV_LIB_DIR" SOFTVERBS_IPS=127.0.0.2 timeout 60 \
        "$BUILD/tests/hosttrace/softverbs/sv_peer" client 127.0.0.1 18601
    crc=$?
    wait $srv
    src=$?
    cat /tmp/sv_peer_server.$$
    rm -f /tmp/sv_peer_server.$$
    [ $crc -eq 0 ] && [ $src -eq 0 ] && { echo "PASS loopback"; exit 0; }
    echo "FAIL: sv_peer client $crc server $src"
    exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "skipped: needs root for network namespaces"
    exit 77
fi
# shellcheck source=../../../scripts/netns-softverbs.sh
source "$ROOT/scripts/netns-softverbs.sh"
WORK="$(mktemp -d)"
cleanup() { sv_netns_down; [ -n "${SV_KEEP:-}" ] && cp -r "$WORK" "$SV_KEEP"; rm -rf "$WORK"; }
sv_netns_up || { cleanup; exit 1; }
trap cleanup EXIT

fail() { echo "FAIL: $*"; exit 1; }

# Waits (at most 10 s) until TCP port $2 listens in namespace $1.
wait_listen() {
    for _ in $(seq 100); do
        ip netns exec "$1" ss -ltn 2>/dev/null | grep -q ":$2 " && return 0
        sleep 0.1
    done
    return 1
}

start_capture() {
    ip netns exec "$SV_NS_A" timeout -k 5 120 tcpdump -i "v${SV_NS_A}" -s 0 -B 65536 --immediate-mode -U -w "$WORK/cap.pcap" \
        udp port 4791 2>"$WORK/tcpdump.log" &
    CAP_PID=$!
    for _ in $(seq 50); do
        grep -q "listening on" "$WORK/tcpdump.log" 2>/dev/null && return 0
        sleep 0.1
    done
    fail "tcpdump did not start: $(cat "$WORK/tcpdump.log")"
}

stop_capture() {
    # tcpdump drops what is still in its ring when interrupted: wait (at most 10 s) until
    # the file has not grown for 1 s, so the tail of the run is in the capture (on a loaded
    # machine tcpdump itself may wait for the CPU). --immediate-mode above keeps libpcap
    # from holding packets in a ring block until its timeout.
    local last=-1 size stable=0
    for _ in $(seq 50); do
        sleep 0.2
        size=$(stat -c %s "$WORK/cap.pcap" 2>/dev/null || echo 0)
        if [ "$size" -eq "$last" ]; then
            stable=$((stable + 1))
            [ "$stable" -ge 5 ] && break
        else
            stable=0
        fi
        last=$size
    done
    kill -INT "$CAP_PID" 2>/dev/null
    wait "$CAP_PID" 2>/dev/null
}

# tshark guesses what an InfiniBand payload carries (Ethernet over IB, iSER, SMB Direct...)
# and reports perftest's arbitrary payload bytes as malformed frames of those protocols;
# only the InfiniBand headers are under test, so the payload heuristics are switched off.
TSHARK_IB=(-d udp.port==4791,infiniband)
for h in eth_over_ib mellanox_eoib fc_infiniband sdp_infiniband iser_infiniband lnet_ib \
    rpcrdma_infiniband smb_direct_infiniband smcr_infiniband nvme_rdma; do
    TSHARK_IB+=(--disable-heuristic "$h")
done

# The capture must be genuine RoCEv2: the shared parser with ICRC check, tshark's
# InfiniBand dissector and (when built) insert-dp decode all agree on the packet count.
check_capture() {
    "$BUILD/tests/hosttrace/softverbs/sv_pcap_check" "$WORK/cap.pcap" > "$WORK/check.txt"
    local rc=$?
    cat "$WORK/check.txt"
    [ $rc -eq 0 ] || fail "capture has malformed packets or bad ICRCs"
    ROCE=$(awk '$1=="roce"{print $2}' "$WORK/check.txt")
    local ts_all ts_bad
    ts_all=$(timeout 120 tshark -r "$WORK/cap.pcap" "${TSHARK_IB[@]}" -Y infiniband 2>/dev/null | wc -l)
    ts_bad=$(timeout 120 tshark -r "$WORK/cap.pcap" "${TSHARK_IB[@]}" \
        -Y '_ws.malformed || _ws.expert.severity >= error' 2>/dev/null | wc -l)
    echo "tshark infiniband $ts_all malformed_or_error $ts_bad"
    [ "$ts_all" -eq "$ROCE" ] || fail "tshark decodes $ts_all InfiniBand packets, the parser $ROCE"
    [ "$ts_bad" -eq 0 ] || fail "tshark reports $ts_bad malformed/error packets"
    local dp="${INSERT_DP:-$BUILD/dataplane/tools/insert-dp}"
    if [ -x "$dp" ]; then
        if timeout 120 "$dp" decode "$WORK/cap.pcap" > "$WORK/decode.csv" 2>"$WORK/decode.err"; then
            local rows=$(($(wc -l < "$WORK/decode.csv") - 1))
            echo "insert-dp decode rows $rows"
            [ "$rows" -eq "$ROCE" ] || fail "insert-dp decode gives $rows rows for $ROCE packets"
        else
            echo "note: insert-dp decode unavailable: $(head -1 "$WORK/decode.err")"
        fi
    fi
}

# insert-dp replay of the capture must find the messages and bytes perftest moved:
# check_replay OP COUNT SIZE (OP as in SPEC.md msg records: WRITE, READ, SEND).
check_replay() {
    local dp="${INSERT_DP:-$BUILD/dataplane/tools/insert-dp}"
    [ -x "$dp" ] || { echo "note: no insert-dp, replay not checked"; return 0; }
    if ! timeout 120 "$dp" replay "$WORK/cap.pcap" --quiet --records "$WORK/records.jsonl" \
        > "$WORK/replay.log" 2>&1; then
        echo "note: insert-dp replay unavailable: $(tail -1 "$WORK/replay.log")"
        return 0
    fi
    # With retransmissions (a starved engine thread times out) the per-message accounting
    # is insert-dp's to define (first observation of each PSN up to the freeze): compare
    # exactly only on captures without retransmitted PSNs.
    # A capture that lost packets (tcpdump reports "N packets dropped by kernel" on a busy
    # machine) cannot be compared either.
    local strict=1 dropped
    [ "$(awk '$1=="dup_psn"{print $2}' "$WORK/check.txt")" -eq 0 ] || strict=0
    dropped=$(awk '/dropped by kernel/{print $1}' "$WORK/tcpdump.log")
    [ "${dropped:-0}" -eq 0 ] || { strict=0; echo "note: tcpdump dropped $dropped packets"; }
    python3 - "$WORK/records.jsonl" "$1" "$2" "$3" "$strict" <<'PY' || fail "insert-dp replay disagrees with perftest"
import json, sys
path, op, count, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
strict = sys.argv[5] == "1"
msgs = [r for r in map(json.loads, open(path)) if r.get("type") == "msg" and r.get("op") == op]
# Every message perftest moved, with all its bytes; completion status is the telemetry's
# judgement (printed, not checked here).
ok = sum(1 for m in msgs if m.get("status") == "ok")
total = sum(m.get("bytes") or 0 for m in msgs)
print(f"insert-dp replay: {len(msgs)} {op} messages ({ok} status ok), {total} bytes; "
      f"perftest: {count} x {size}" + ("" if strict else " (not compared)"))
sys.exit(0 if not strict or (len(msgs) == count and total == count * size) else 1)
PY
}

run_peer() {
    sv_in_a timeout 60 "$BUILD/tests/hosttrace/softverbs/sv_peer" server 18600 > "$WORK/server.log" 2>&1 &
    local srv=$!
    wait_listen "$SV_NS_A" 18600 || fail "sv_peer server did not listen"
    sv_in_b timeout 60 "$BUILD/tests/hosttrace/softverbs/sv_peer" client "$SV_IP_A" 18600
    local crc=$?
    wait "$srv"
    local src=$?
    cat "$WORK/server.log"
    [ $crc -eq 0 ] && [ $src -eq 0 ] || fail "sv_peer client $crc server $src"
}

run_perftest() {
    local tool=$1
    shift
    sv_in_a timeout 90 "$tool" -F "$@" > "$WORK/server.log" 2>&1 &
    local srv=$!
    wait_listen "$SV_NS_A" 18515 || { cat "$WORK/server.log"; fail "$tool server did not listen"; }
    sv_in_b timeout 90 "$tool" -F "$@" "$SV_IP_A" > "$WORK/client.log" 2>&1
    local crc=$?
    wait "$srv"
    local src=$?
    cat "$WORK/client.log"
    [ $crc -eq 0 ] && [ $src -eq 0 ] || { cat "$WORK/server.log"; fail "$tool client $crc server $src"; }
    # The result table: a line of numbers under the "#bytes" header.
    grep -A1 '#bytes' "$WORK/client.log" | tail -1 | grep -Eq '^ *[0-9]+ +[0-9]+' ||
        fail "$tool printed no result line"
}

mode="${1:-}"
shift || true
case "$mode" in
    peer) run_peer ;;
    peer_loss)
        export SOFTVERBS_DROP=0.01
        run_peer
        ;;
    perftest)
        start_capture
        run_perftest "$@"
        stop_capture
        check_capture
        # RC bandwidth tests: messages and bytes must match what perftest moved.
        tool=$1
        shift
        iters=1000 size=65536 rc=1
        while [ $# -gt 0 ]; do
            case "$1" in
                -n) iters=$2; shift ;;
                -s) size=$2; shift ;;
                -c) [ "$2" = RC ] || rc=0; shift ;;
            esac
            shift
        done
        if [ $rc -eq 1 ]; then
            case "$tool" in
                ib_write_bw) check_replay WRITE "$iters" "$size" ;;
                ib_read_bw) check_replay READ "$iters" "$size" ;;
                ib_send_bw) check_replay SEND "$iters" "$size" ;;
            esac
        fi
        ;;
    perftest_loss)
        export SOFTVERBS_DROP=0.01
        start_capture
        run_perftest "$@"
        stop_capture
        check_capture
        dup=$(awk '$1=="dup_psn"{print $2}' "$WORK/check.txt")
        [ "$dup" -gt 0 ] || fail "1% loss but no retransmitted PSN in the capture"
        ;;
    perftest_ecn)
        export SOFTVERBS_ECN=0.05
        start_capture
        run_perftest ib_write_bw "$@"
        stop_capture
        check_capture
        ce=$(awk '$1=="ecn_ce"{print $2}' "$WORK/check.txt")
        cnp=$(awk '$1=="opcode" && $2=="0x81"{print $4}' "$WORK/check.txt")
        [ "$ce" -gt 0 ] || fail "SOFTVERBS_ECN=0.05 but no CE-marked packet in the capture"
        [ "${cnp:-0}" -gt 0 ] || fail "CE-marked packets but no CNP in the capture"
        ;;
    *)
        echo "usage: $0 loopback|peer|peer_loss|perftest TOOL ARGS|perftest_loss TOOL ARGS|perftest_ecn ARGS" >&2
        exit 2
        ;;
esac
echo "PASS $mode $*"

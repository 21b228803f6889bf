#!/bin/sh
# Forwarding rate and added latency of insert-dp inline next to dpdk-testpmd's io
# forwarding on the same ports, in the same run (docs/performance.md,
# "Inline forwarding next to dpdk-testpmd").
#
#   scripts/live-perf.sh INSERT_DP [SECONDS]
#
# 1. in-memory ports: two net_null vdevs (the null PMD makes and eats frames; the rate is
#    the forwarding loop itself), 1 forwarding lcore each.
# 2. veth/af_packet: the netns topology of scripts/netns-inline.sh at MTU 9000, traffic from
#    A by tcpreplay --topspeed (the bundled captures looped), rate = frames forwarded to B
#    per second; latency = one-way time of 1 KB RoCE frames sent one at a time from A until
#    they arrive at B (scripts/frame-latency.py), median and p99, without load.
# Needs root. Each DPDK process has its own --file-prefix; the namespaces are removed.
set -eu
DP=$(readlink -f "$1")
SECS=${2:-5}
HERE=$(dirname "$(readlink -f "$0")")
ROOT=$(dirname "$HERE")
NS=perf$$
TMP=$(mktemp -d)
# testpmd leaves its runtime directory behind: remove ours.
cleanup() { "$HERE/netns-inline.sh" down $NS; rm -rf "$TMP" "/var/run/dpdk/tp$$" "/var/run/dpdk/tpv$$"; }
trap cleanup EXIT INT TERM

testpmd_rate() {  # testpmd_rate LABEL NETNS-ROLE-or-"" EAL-ARGS... : prints forwarded pps
    label=$1; role=$2; shift 2
    pre=""
    [ -n "$role" ] && pre="$HERE/netns-inline.sh exec $NS $role"
    { sleep 4; echo "start"; sleep "$SECS"; echo "show port stats all"; echo "stop"; sleep 1; echo "quit"; } |
        $pre dpdk-testpmd "$@" --file-prefix "tp$$" --log-level=3 -- -i --forward-mode=io \
            --nb-cores=1 --rxq=1 --txq=1 > "$TMP/tp.out" 2>&1 || true
    # TX-packets of both ports over the forwarding time, from the "stop" totals.
    awk -v s="$SECS" -v l="$label" '/TX-packets:/ {tx+=$NF} END {printf "%-28s testpmd io   %12.0f pps\n", l, tx/2/s*2/2}' \
        "$TMP/tp.out"
}

# Hugepages when there are free ones (as the published figures were measured), else 4 KiB
# pages.
MEM="--no-huge -m 1024"
[ "$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages 2>/dev/null || echo 0)" -ge 512 ] && MEM="-m 512"
HZ=$(getconf CLK_TCK)
echo "== in-memory ports (net_null), ${SECS} s each, EAL memory: $MEM"
echo "   rate over wall time / per CPU-second of the forwarding thread (the noise-robust figure on a shared VM)"
# testpmd: accumulated forward stats appear after "stop"; its forwarding lcore's CPU time is
# read from /proc before it quits.
{ sleep 4; echo "start"; sleep "$SECS"; echo "stop"
  p=$(pgrep -f "file-prefix tp$$" | head -1)
  for t in /proc/$p/task/*; do
      [ "$(cat "$t/comm")" = rte-worker-1 ] && awk '{print $14 + $15}' "$t/stat" > "$TMP/tp.cpu"
  done
  sleep 1; echo "quit"; } |
    dpdk-testpmd -l 0,1 --no-pci $MEM --vdev net_null0 --vdev net_null1 --file-prefix "tp$$" \
        --log-level=3 -- -i --forward-mode=io --nb-cores=1 > "$TMP/tp.out" 2>&1 || true
tp=$(awk '/Accumulated forward statistics for all ports/ {f=1} f && /TX-packets:/ {print $6; exit}' "$TMP/tp.out")
tp_cpu=$(awk -v hz="$HZ" '{print $1 / hz}' "$TMP/tp.cpu")
echo "testpmd io fwd (net_null):                $(echo "$tp $SECS $tp_cpu" | awk '{printf "%.2f / %.2f Mpps", $1/$2/1e6, $1/$3/1e6}')"
for off in off auto; do
    "$DP" inline --vdev net_null0 --vdev net_null1 --offload $off --duration "$SECS" --quiet \
        --max-endpoints 65536 -- $MEM 2> "$TMP/dp.err" > /dev/null
    n=$(sed -n 's/.* \([0-9]*\) forwarded.*/\1/p' "$TMP/dp.err")
    cpu=$(sed -n 's/.*worker CPU \([0-9.]*\) s.*/\1/p' "$TMP/dp.err")
    echo "insert-dp inline (net_null, offload $off): $(echo "$n $SECS $cpu $tp $tp_cpu" |
        awk '{printf "%.2f / %.2f Mpps (%.0f%% / %.0f%% of testpmd)", $1/$2/1e6, $1/$3/1e6, 100*$1/$4, 100*($1/$3)/($4/$5)}')"
done

echo "== veth/af_packet, MTU 9000, ${SECS} s each"
"$HERE/netns-inline.sh" up $NS
frames="$TMP/in.pcap"
cat "$ROOT/pcaps/rc_mixed.pcap" > "$frames"
AFP=framesz=10240,blocksz=20480,framecnt=512
run_load() { "$HERE/netns-inline.sh" exec $NS a timeout "$1" tcpreplay -q -i a0 --topspeed --loop=0 "$frames" >/dev/null 2>&1 || true; }
count_b() { "$HERE/netns-inline.sh" exec $NS b cat /sys/class/net/b0/statistics/rx_packets; }
for fwd in testpmd insert-dp; do
    if [ $fwd = testpmd ]; then
        { sleep 6; echo start; sleep $((SECS * 2 + 10)); echo stop; echo quit; } |
            "$HERE/netns-inline.sh" exec $NS mid dpdk-testpmd -l 0,1 --no-pci --no-huge -m 1024 --file-prefix "tpv$$" \
            --log-level=3 --vdev "net_af_packet0,iface=a1,$AFP" --vdev "net_af_packet1,iface=b1,$AFP" \
            -- -i --forward-mode=io --nb-cores=1 --mbuf-size=12288 --total-num-mbufs=16384 > "$TMP/tpv.out" 2>&1 &
        sleep 8
    else
        "$HERE/netns-inline.sh" exec $NS mid "$DP" inline --iface a1 --iface b1 --quiet --duration $((SECS * 2 + 10)) \
            -- --no-huge -m 1024 2> "$TMP/dpv.err" > /dev/null &
        sleep 8  # its tables (1M endpoints) are populated and locked at start
    fi
    # latency: frames sent one at a time from A, received at B (no load)
    lat=$(python3 "$HERE/frame-latency.py" $NS-a a0 $NS-b b0 1000)
    before=$(count_b)
    run_load "$SECS"
    after=$(count_b)
    echo "$fwd: $(echo "$before $after $SECS" | awk '{printf "%.3f Mpps forwarded A->B", ($2-$1)/$3/1e6}'); latency: $lat"
    wait
done

#!/usr/bin/env bash
# scripts/demo.sh: INSERT's main job on one machine (docs/demo.md). With no arguments (as
# root): installs what is missing, builds what is missing, starts a Prometheus Alertmanager
# (when installed) and the live correlator (insert-correlate --listen, delivering to it),
# and runs an emulated cluster (scripts/cluster.sh: five host namespaces, insert-dp inline
# as the only path between the left hosts h1-h3 and the right hosts h4-h5, tbf toward h4)
# with
#   - insert-dp inline in the middle sending its records to the correlator's socket
#     (--records unix:), kept in dp.jsonl on the way,
#   - one insert-trace per host namespace (--netns, --host hN: each host its own clock
#     domain) sending its records there too (--unix), kept in trace-hN.jsonl,
#   - unmodified perftest over softverbs, each application in its tenant's cgroup:
#     ib_write_bw, ib_read_bw and ib_send_bw pairs across the box; an incast (h1, h2, h3
#     -> h4 at once through the tbf bottleneck, softverbs marking 5% of the senders'
#     packets ECN-CE for it) while a latency test runs from h2 to h4 (ib_send_lat:
#     64-byte SENDs back and forth, every one signaled); a victim ib_write_bw server
#     attacked by insert-attack rkey-guess, and another one whose QP, after its client's
#     writes, receives packets injected by insert-attack inject from h2, first from h2's
#     own address, then spoofed as its client's, then a WRITE First spoofed as its client's
#     whose Middle and Last never come,
# while the correlator joins everything live: its alerts and congestion episodes are printed
# as it tells them, and the Alertmanager's listings as the demo sees them (polled every
# 100 ms). Then it stops everything, deletes the cluster, prints the correlator's report,
# how long each attack's alert took from the attack's first packet to the Alertmanager and
# the latency test's network latency before, in and after the incast, and leaves in the
# output directory dp.jsonl, trace-h1..h5.jsonl, correlated.jsonl and report.html (the
# live correlator's records and page: charts, tables; self-contained), attacks.jsonl (one
# line per attacker run), alert-delays.jsonl, latency.json, workload.json (which pid
# ran what where: the ground truth) and logs/. About 25-35 s on a 2-core machine; the
# first time, ~2.5 min more to build what it runs.
#
#   scripts/demo.sh [--out DIR] [--no-correlate] [--alertmanager URL | --no-alertmanager]
#                            the cluster (root); DIR default out/demo-TIME; URL: deliver the
#                            alerts to this Prometheus Alertmanager (http://HOST:PORT)
#                            instead of one the demo starts; --no-correlate: the producers
#                            write their files, nothing is correlated
#   scripts/demo.sh --scale-out [--out DIR] [--alertmanager URL | --no-alertmanager]
#                            the same cluster and workload, the producers publishing to a
#                            3-node NATS JetStream cluster too (bus/: its configurations and
#                            stores) and two insert-correlate --nats instances instead of
#                            --listen (correlated-c1.jsonl, correlated-c2.jsonl, together
#                            correlated.jsonl; docs/scale-out.md "Demo")
#   scripts/demo.sh --replay [FILE.pcap]           the offline pipeline over a capture
#                                                  (default pcaps/rc_mixed.pcap; no root)
# INSERT_BUILD_ROOT: the build directory. Default: build/ when it has every binary the demo
# runs, else build-demo/: those binaries only, plain (no LTO, no profile feedback, no tests).
# INSERT_ALERTMANAGER: the Alertmanager the demo starts (/usr/bin/prometheus-alertmanager).
# DEMO_TEE_TIMES=FILE: per chunk a producer sent, when it came and its data times (docs/demo.md).
set -uo pipefail

caller_dir=$PWD
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${INSERT_BUILD_ROOT:-${INSERT_BUILD_DIR:-}}

usage() { sed -n '2,46p' "$0" | sed 's/^# \{0,1\}//'; }

mode=cluster replay_file=pcaps/rc_mixed.pcap out="" correlate=1 alertmanager="" own_alertmanager=1
scale_out=0 BUS_PRODUCER_ARGS=()  # the producers' --nats options (--scale-out: scripts/demo-bus.sh)
while [ $# -gt 0 ]; do
    case "$1" in
        --replay)
            mode=replay
            if [ $# -gt 1 ] && [ "${2#-}" = "$2" ]; then
                replay_file=$2
                [ "${replay_file#/}" != "$replay_file" ] || replay_file=$caller_dir/$replay_file
                shift
            fi
            ;;
        --out)
            [ $# -gt 1 ] || { echo "demo: --out needs a directory" >&2; exit 2; }
            out=$2
            [ "${out#/}" != "$out" ] || out=$caller_dir/$out  # relative to where it was run
            shift
            ;;
        --no-correlate) correlate=0 ;;
        --scale-out) scale_out=1 ;;
        --alertmanager)
            [ $# -gt 1 ] && [ "${2#http://}" != "$2" ] ||
                { echo "demo: --alertmanager needs a URL http://HOST:PORT" >&2; exit 2; }
            alertmanager=$2
            own_alertmanager=0
            shift
            ;;
        --no-alertmanager) own_alertmanager=0 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "demo: unknown option '$1' (scripts/demo.sh --help)" >&2; exit 2 ;;
    esac
    shift
done

die() { echo "demo: $*" >&2; exit 1; }
[ "$scale_out" -eq 0 ] || [ "$correlate" -eq 1 ] || die "--scale-out correlates: no --no-correlate with it"
[ "$scale_out" -eq 0 ] || [ "$mode" = cluster ] || die "--scale-out runs the cluster: no --replay with it"
now_ns() { local t=${EPOCHREALTIME/[.,]/}; echo "${t}000"; }  # CLOCK_REALTIME ns, no fork of date
T0=$(now_ns)
# Progress lines carry the seconds since the start.
say() { printf 'demo: [%5.1fs] %s\n' "$(( ($(now_ns) - T0) / 1000000 ))e-3" "$*"; }

# ensure_built TARGET...: packages (scripts/setup.sh: a no-op when all are there), then the
# binaries. From INSERT_BUILD_ROOT when it is set; else from build/ when it has all of them
# (scripts/build.sh's optimized build, for benchmarks, say); else from build-demo/,
# configured plain and asked for these targets only - not the ~290 targets (tests,
# benchmarks, fuzzers) with LTO and a profile training run that scripts/build.sh makes,
# ~11 min of a first demo on 2 cores. In a directory of the demo's own (build-demo/) ninja
# brings the targets up to date; in another one it builds only the missing ones, as
# before. Sets `build` and exports it as INSERT_BUILD_ROOT (scripts/cluster.sh's insert-dp).
ensure_built() {
    local t missing=()
    scripts/setup.sh >&2 || die "scripts/setup.sh failed"
    if [ -z "$build" ]; then
        build=build
        for t in "$@"; do [ -e "build/$t" ] || build="build-demo"; done
    fi
    export INSERT_BUILD_ROOT="$build"
    # -O2, not the release default -O3: 20-40% less compiler time on the largest files
    # (CLI11's command lines, the correlator), and the demo's traffic is not CPU-bound.
    if [ ! -f "$build/build.ninja" ]; then
        say "configuring $build: plain (-Db_lto=false -Db_pgo=off -Doptimization=2)"
        local log
        log=$(mktemp)
        meson setup "$build" -Db_lto=false -Db_pgo=off -Doptimization=2 > "$log" 2>&1 ||
            { cat "$log" >&2; rm -f "$log"; die "meson setup $build failed"; }
        rm -f "$log"
    fi
    if [ "$build" = build-demo ]; then
        missing=("$@")
    else
        for t in "$@"; do [ -e "$build/$t" ] || missing+=("$t"); done
    fi
    if [ ${#missing[@]} -gt 0 ]; then
        say "ninja -C $build ${missing[*]}"
        ninja -C "$build" "${missing[@]}" >&2 || die "ninja -C $build ${missing[*]} failed"
    fi
}

# ---- the offline pipeline over a capture (the demo before the cluster) -------------------
run_replay() {
    ensure_built dataplane/tools/insert-dp
    local records=$build/demo-records.jsonl
    "$build/dataplane/tools/insert-dp" replay "$replay_file" --workers 2 --records "$records" || exit 1
    echo
    echo "records: $records ($(grep -c '"type":"msg"' "$records") msg records); first message:"
    grep -m1 '"type":"msg"' "$records"
}
if [ "$mode" = replay ]; then
    run_replay
    exit 0
fi

# ---- the cluster ---------------------------------------------------------------------------
[ "$(id -u)" -eq 0 ] || die "the cluster needs root (network namespaces, eBPF); 'scripts/demo.sh --replay' runs without"

# shellcheck source=cluster.sh
source scripts/cluster.sh
# shellcheck source=demo-bus.sh
[ "$scale_out" -eq 0 ] || source scripts/demo-bus.sh

# What the demo runs, built by ensure_built; the paths are set once the build is chosen.
NEEDED=(dataplane/tools/insert-dp hosttrace/insert-trace bench/attack/insert-attack
    hosttrace/softverbs/libibverbs.so.1.14.44 hosttrace/softverbs/libmlx5.so.1.24.44
    hosttrace/softverbs/libefa.so.1.2.44 correlator/insert-correlate)
[ "$scale_out" -eq 0 ] || NEEDED+=(correlator/insert-report)  # the instances' records as one page

# The workload (docs/demo.md). Perftest sizes are small: everything crosses one insert-dp
# worker and softverbs on two shared cores.
PAIR_ARGS=(-F -n 1000 -s 4096)
# Incast senders keep 16 x 16 KB in flight each (64 packets): the tbf queue (~0.8 MB, ~30 ms
# at 200 Mbit/s) stays below its limit and below perftest's 67 ms retransmission timeout,
# so the episode shows as queueing delay and ECN marks, without drops or timeouts. 2000
# messages (32 MB, 1.3 s alone at the bottleneck's rate) per sender: on a loaded machine
# the three start up to a second apart, and must still all send at once.
INCAST_ARGS=(-F -n 2000 -s 16384 -t 16)
INCAST_ECN=0.05
# The latency-sensitive application into h4 during the incast: perftest's ib_send_lat, a
# ping-pong of 64-byte SENDs between h2 (the client) and h4, LAT_ITERS exchanges, every
# request signaled (a latency test's send queue is one deep: perftest signals each SEND and
# waits for its completion). Started LAT_LEAD_S before the incast's senders (its unloaded
# latency is h4's baseline and its own), it ends after them: unloaded it makes ~430
# exchanges a second, in the incast each one waits ~30 ms in the tbf queue, so the few it
# makes there stretch it over the whole incast (measured: ~900 messages to h4 before the
# incast, ~120 in it, ~1500 after).
# - -n, not -D: with -D each side stops on its own timer, and a last message sometimes
#   reached a QP whose process was gone (a true unowned_qp alert, 1 run in ~10 with
#   ib_write_lat -D). With -n both sides stop after the same exchange: the server's last
#   SEND is acknowledged before either side closes the connection, and nothing follows.
# - ib_send_lat -e, not ib_write_lat: ib_write_lat's sides spin on memory for the peer's
#   WRITE without a verbs call, so softverbs' engine thread must receive for them while the
#   spinning process holds the core: on two cores its WRITEs took 3-4 ms (p50) of network
#   time unloaded. ib_send_lat -e sleeps on the completion channel: ~60 us.
# - --latency_gap on the client only: perftest paces by spinning LAT_GAP_US before each
#   SEND, so the exchanges last at least LAT_ITERS x LAT_GAP_US (5 s) however fast the
#   machine (without it: ~3500 a second). A gap on the server would spin right after each
#   receive, while the acknowledgement of the client's SEND - the latency measured - waits
#   for the core (measured: up to ~1 ms at p50).
LAT_ITERS=2500
LAT_GAP_US=2000
LAT_ARGS=(-F -e -n "$LAT_ITERS" -s 64)
LAT_LEAD_S=1
RKEY_GUESSES=10
# The injection victim: an ib_write_bw server whose client writes INJECT_ITERS messages of
# 64 bytes (one packet each), after which both keep their QPs for --wait_destroy seconds.
# Then the server's QP expects exactly the client's first PSN + INJECT_ITERS, and the
# client's QP has shown its writes traced: a spoofed request from the client's address is a
# message the client never posted (injected_message).
# The pair's path MTU is INJECT_MTU (perftest -m; softverbs' default is 4096) so that the
# third injection, a WRITE First, is an honest one: its payload one path MTU, its RETH
# length INJECT_FIRST_PKTS MTUs - the 4096 bytes the server advertises behind its VAddr
# (perftest's buffer half: max(-s, 4096)), within the victim's MR as a real First would be.
# It is sent INJECT_FIRST_GAP_S after the spoofed WRITE Only, more than --alert-gap (1 s):
# alerts of one kind, victim and source less than that apart are one alert
# (docs/correlation.md 8), and this one is an attack of its own.
INJECT_ITERS=200
INJECT_MTU=1024
INJECT_FIRST_PKTS=4
INJECT_FIRST_GAP_S=1.5
INJECT_PAIR_ARGS=(-F -n "$INJECT_ITERS" -s 64 -m "$INJECT_MTU" --wait_destroy=5)
PHASE_DEADLINE_S=60
CONGESTION_BIN_MS=50

# ---- tenants: one cgroup v2 per kind of application ---------------------------------------------
# Every application runs in its tenant's cgroup (insert-trace reports the cgroup id; the
# report draws network latency per cgroup). Skipped where no cgroup v2 is writable.
TENANTS=(pairs incast latency victims attackers)
CG_ROOT=""
declare -A CG_DIR CG_ID
tenants_up() {
    local mount t
    mount=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)
    [ -n "$mount" ] && mkdir "$mount/insert-demo-$NAME" 2>/dev/null || {
        say "no writable cgroup v2: every application in the demo's own cgroup"
        return 0
    }
    CG_ROOT=$mount/insert-demo-$NAME
    for t in "${TENANTS[@]}"; do
        mkdir "$CG_ROOT/$t" || die "cannot create cgroup $CG_ROOT/$t"
        CG_DIR[$t]=$CG_ROOT/$t
        CG_ID[$t]=$(stat -c %i "$CG_ROOT/$t")  # what bpf_get_current_cgroup_id() returns
    done
}
tenants_down() {  # after every process ended: an empty cgroup can be removed
    [ -n "$CG_ROOT" ] || return 0
    local t
    for _ in $(seq 20); do
        for t in "${TENANTS[@]}"; do rmdir "$CG_ROOT/$t" 2>/dev/null; done
        rmdir "$CG_ROOT" 2>/dev/null && break
        sleep 0.1
    done
    [ -d "$CG_ROOT" ] && echo "demo: cgroup $CG_ROOT could not be removed" >&2
    CG_ROOT=""
}

# ---- process table ---------------------------------------------------------------------------
declare -A P_PID P_ROW P_START P_END P_STATUS P_ENV P_ARGS P_TENANT
KEYS=()
PHASE=""
TENANT=""

# spawn KEY HOST SLOT ROLE GROUP TARGET PEER_IP PORT "ENV..." TOOL ARGS...
# Runs TOOL in host HOST's namespace on its address SLOT with softverbs, in the cgroup of
# the current TENANT, output line-buffered into logs/KEY.log. sh (after moving itself into
# the cgroup), `ip netns exec`, env and stdbuf all exec: $! is the tool's own pid, the one
# insert-trace reports.
spawn() {
    local key=$1 host=$2 slot=$3 role=$4 group=$5 target=$6 peer=$7 port=$8 envs=$9
    shift 9
    local ip cg=${CG_DIR[$TENANT]:-}
    ip=$(cluster_ip "$host" "$slot") || die "bad address slot $host/$slot"
    # shellcheck disable=SC2086,SC2016
    sh -c '[ -z "$1" ] || echo $$ > "$1/cgroup.procs" || exit 125; shift; exec "$@"' sh "$cg" \
        ip netns exec "$NAME-$host" env LD_LIBRARY_PATH="$SV_DIR" SOFTVERBS_IPS="$ip" $envs \
        stdbuf -oL "$@" > "$LOGS/$key.log" 2>&1 &
    P_PID[$key]=$!
    P_START[$key]=$(now_ns)
    P_ROW[$key]="$1	$role	$host	$ip	$peer	$port	$PHASE	$group	$target"
    P_ENV[$key]="$envs"
    P_ARGS[$key]="${*:2}"
    P_TENANT[$key]=$TENANT
    KEYS+=("$key")
}

# Waits (at most SECONDS) for every KEY to end; what is still running then is killed.
# Records each exit status; returns 1 if any is not 0.
wait_keys() {
    local limit=$1 key pid alive deadline
    shift
    deadline=$(($(date +%s) + limit))
    while :; do
        alive=0
        for key in "$@"; do kill -0 "${P_PID[$key]}" 2>/dev/null && alive=1; done
        [ $alive -eq 0 ] && break
        if [ "$(date +%s)" -ge "$deadline" ]; then
            for key in "$@"; do
                kill -0 "${P_PID[$key]}" 2>/dev/null || continue
                echo "demo: $key (pid ${P_PID[$key]}) still running after ${limit} s: killed" >&2
                kill -KILL "${P_PID[$key]}" 2>/dev/null
            done
            break
        fi
        sleep 0.1
    done
    local rc=0
    for key in "$@"; do
        pid=${P_PID[$key]}
        wait "$pid" 2>/dev/null
        P_STATUS[$key]=$?
        P_END[$key]=$(now_ns)
        if [ "${P_STATUS[$key]}" -ne 0 ]; then
            echo "demo: $key exited ${P_STATUS[$key]}: $LOGS/$key.log: $(tail -2 "$LOGS/$key.log" | tr '\n' ' ')" >&2
            rc=1
        fi
    done
    return $rc
}

wait_listen() {  # HOST PORT KEY: bounded (20 s) wait until the server KEY listens
    local host=$1 port=$2 key=$3
    for _ in $(seq 200); do
        ip netns exec "$NAME-$host" ss -ltn 2>/dev/null | grep -q ":$port " && return 0
        kill -0 "${P_PID[$key]}" 2>/dev/null || break
        sleep 0.1
    done
    die "$key did not listen on $host:$port: $(tail -2 "$LOGS/$key.log" | tr '\n' ' ')"
}

wait_line() {  # KEY REGEX SECONDS: bounded wait for a line in KEY's log
    local key=$1 re=$2 limit=$3
    for _ in $(seq $((limit * 10))); do
        grep -qE "$re" "$LOGS/$key.log" 2>/dev/null && return 0
        kill -0 "${P_PID[$key]}" 2>/dev/null || break
        sleep 0.1
    done
    die "$key printed no '$re' within $limit s: $LOGS/$key.log"
}

declare -A PH_START PH_END
PHASES=()
phase_begin() { PHASE=$1; PHASES+=("$1"); PH_START[$1]=$(now_ns); }
phase_end() { PH_END[$PHASE]=$(now_ns); say "  $PHASE: $(((PH_END[$PHASE] - PH_START[$PHASE]) / 1000000)) ms"; }

# ---- the workload ----------------------------------------------------------------------------
phase_pairs() {
    phase_begin pairs
    TENANT=pairs
    # Servers on h5's three addresses, clients on h1-h3: every pair crosses insert-dp.
    local -a tools=(ib_write_bw ib_read_bw ib_send_bw) names=(write read send) clients=(h1 h2 h3)
    local i
    for i in 0 1 2; do
        spawn "srv_${names[$i]}" h5 "$i" server "pair_${names[$i]}" "" "$(cluster_ip "${clients[$i]}")" \
            $((18520 + i)) "" "${tools[$i]}" "${PAIR_ARGS[@]}" -p $((18520 + i))
    done
    for i in 0 1 2; do wait_listen h5 $((18520 + i)) "srv_${names[$i]}"; done
    for i in 0 1 2; do
        spawn "cli_${names[$i]}" "${clients[$i]}" 0 client "pair_${names[$i]}" "" "$(cluster_ip h5 "$i")" \
            $((18520 + i)) "" "${tools[$i]}" "${PAIR_ARGS[@]}" -p $((18520 + i)) "$(cluster_ip h5 "$i")"
    done
    say "  pairs: ${tools[*]} from h1/h2/h3 to h5 (${PAIR_ARGS[*]:1})"
    wait_keys "$PHASE_DEADLINE_S" srv_write srv_read srv_send cli_write cli_read cli_send ||
        die "a perftest pair failed"
    phase_end
}

phase_incast() {
    phase_begin incast
    # Three servers on h4 (one per address) first: they only listen, and a slow start of
    # theirs must not eat into the latency application's time. The tbf on the link to h4 is
    # the bottleneck. softverbs marks a fraction of the senders' packets CE (the kernel has
    # no AQM that marks); h4 answers with CNPs.
    TENANT=incast
    local i h
    for i in 0 1 2; do
        spawn "incast_srv$((i + 1))" h4 "$i" server "incast$((i + 1))" "" "$(cluster_ip "h$((i + 1))")" \
            $((18540 + i)) "" ib_write_bw "${INCAST_ARGS[@]}" -p $((18540 + i))
    done
    for i in 0 1 2; do wait_listen h4 $((18540 + i)) "incast_srv$((i + 1))"; done
    # Then the latency-sensitive application: ib_send_lat between h2 (its slot 1) and h4's
    # slot 3, its SENDs to h4 through the same bottleneck; its unloaded messages make h4's
    # baseline. The three senders start LAT_LEAD_S after it.
    TENANT=latency
    spawn lat_srv h4 3 server latency "" "$(cluster_ip h2 1)" 18550 "" ib_send_lat \
        "${LAT_ARGS[@]}" -p 18550
    wait_listen h4 18550 lat_srv
    spawn lat_cli h2 1 client latency "" "$(cluster_ip h4 3)" 18550 "" ib_send_lat \
        "${LAT_ARGS[@]}" --latency_gap="$LAT_GAP_US" -p 18550 "$(cluster_ip h4 3)"
    wait_line lat_cli '#bytes' 20
    sleep "$LAT_LEAD_S"
    TENANT=incast
    for i in 0 1 2; do
        h=h$((i + 1))
        spawn "incast_cli$((i + 1))" "$h" 0 client "incast$((i + 1))" "" "$(cluster_ip h4 "$i")" \
            $((18540 + i)) "SOFTVERBS_ECN=$INCAST_ECN SOFTVERBS_SEED=$((i + 1))" \
            ib_write_bw "${INCAST_ARGS[@]}" -p $((18540 + i)) "$(cluster_ip h4 "$i")"
    done
    say "  incast: h1, h2, h3 -> h4 (${INCAST_ARGS[*]:1}) through tbf $CLUSTER_TBF_RATE, ECN-CE $INCAST_ECN;" \
        "latency app (ib_send_lat ${LAT_ARGS[*]:1} --latency_gap=$LAT_GAP_US) $(cluster_ip h2 1) -> $(cluster_ip h4 3) meanwhile"
    wait_keys "$PHASE_DEADLINE_S" incast_srv1 incast_srv2 incast_srv3 incast_cli1 incast_cli2 incast_cli3 \
        lat_srv lat_cli || die "an incast sender or receiver, or the latency application, failed"
    phase_end
}

phase_attacks() {
    phase_begin attacks
    local victim_ip client_ip server_ip
    victim_ip=$(cluster_ip h5 0)
    server_ip=$(cluster_ip h5 1)
    client_ip=$(cluster_ip h1)
    TENANT=victims
    # 1. rkey guessing: a victim ib_write_bw server on h5; the attacker on h3 is its client.
    spawn atk_rkey_victim h5 0 server rkey "" "$(cluster_ip h3)" 18530 "" ib_write_bw -F -p 18530
    # 2. injection: an ib_write_bw server on h5 whose client on h1 writes to it, then waits.
    spawn inj_victim h5 1 server inject "" "$client_ip" 18531 "" ib_write_bw "${INJECT_PAIR_ARGS[@]}" -p 18531
    wait_listen h5 18530 atk_rkey_victim
    wait_listen h5 18531 inj_victim
    spawn inj_client h1 0 client inject "" "$server_ip" 18531 "" ib_write_bw \
        "${INJECT_PAIR_ARGS[@]}" -p 18531 "$server_ip"
    TENANT=attackers
    spawn atk_rkey h3 0 attacker "" atk_rkey_victim "$victim_ip" 18530 "" "$ATTACK_BIN" rkey-guess \
        --server "$victim_ip" --port 18530 --count "$RKEY_GUESSES"
    # The victim's QP, rkey and buffer as perftest printed them, and the PSN its client
    # announced; once the client's writes are done (the server waits before destroying its
    # QP), the PSN the QP expects next is that one + INJECT_ITERS (one packet per message).
    wait_line inj_victim 'Waiting [0-9]+ seconds before releasing' 30
    local loc rem qpn rkey va psn mtu
    loc=$(grep -m1 'local address' "$LOGS/inj_victim.log")
    rem=$(grep -m1 'remote address' "$LOGS/inj_victim.log")
    qpn=$(echo "$loc" | sed -n 's/.*QPN \(0x[0-9a-f]*\).*/\1/p')
    rkey=$(echo "$loc" | sed -n 's/.*RKey \(0x[0-9a-f]*\).*/\1/p')
    va=$(echo "$loc" | sed -n 's/.*VAddr \(0x[0-9a-f]*\).*/\1/p')
    psn=$(echo "$rem" | sed -n 's/.*PSN \(0x[0-9a-f]*\).*/\1/p')
    mtu=$(sed -n 's/^ *Mtu *: *\([0-9]*\)\[B\].*/\1/p' "$LOGS/inj_victim.log" | head -1)
    [ -n "$qpn" ] && [ -n "$rkey" ] && [ -n "$va" ] && [ -n "$psn" ] && [ -n "$mtu" ] ||
        die "cannot read the injection victim's QP from $LOGS/inj_victim.log"
    psn=$(printf '0x%x' $(((psn + INJECT_ITERS) & 0xffffff)))
    local inj=(inject --dst "$server_ip" --qpn "$qpn" --psn "$psn" --rkey "$rkey" --va "$va")
    spawn atk_inject h2 0 attacker "" inj_victim "$server_ip" "" "" "$ATTACK_BIN" "${inj[@]}"
    wait_keys 15 atk_inject || die "insert-attack inject failed"
    spawn atk_spoof h2 0 attacker "" inj_victim "$server_ip" "" "" "$ATTACK_BIN" "${inj[@]}" \
        --src "$client_ip"
    wait_keys 15 atk_spoof || die "insert-attack inject --src failed"
    say "  attacks: rkey-guess h3 -> ib_write_bw server $victim_ip ($RKEY_GUESSES rkeys);" \
        "inject h2 -> ib_write_bw server $server_ip QPN $qpn PSN $psn, then spoofed as $client_ip"
    # 3. the accepted WRITE Only moved the QP's expected PSN on by one: at that PSN, spoofed
    # as the client again, a WRITE First of one path MTU (the victim's, as perftest printed
    # it) whose RETH announces INJECT_FIRST_PKTS packets; the rest never comes. The victim
    # accepts it (valid rkey, in bounds) and waits for its Middle; insert-dp writes the
    # message `incomplete` once the client's part of the victim's endpoint idles out
    # (DP_IDLE_TIMEOUT).
    local first_psn
    first_psn=$(printf '0x%x' $(((psn + 1) & 0xffffff)))
    sleep "$INJECT_FIRST_GAP_S"
    spawn atk_first h2 0 attacker "" inj_victim "$server_ip" "" "" "$ATTACK_BIN" inject \
        --dst "$server_ip" --qpn "$qpn" --psn "$first_psn" --rkey "$rkey" --va "$va" \
        --src "$client_ip" --op write-first --len "$mtu" --dma-len $((INJECT_FIRST_PKTS * mtu))
    wait_keys 15 atk_first || die "insert-attack inject --op write-first failed"
    # Its target must still be there: a victim that released its QP before would make it an
    # unowned_qp (--wait_destroy of INJECT_PAIR_ARGS bounds the three injections' time; a
    # victim that exited is a zombie until wait_keys reaps it, hence its state, not kill -0).
    grep -q '^State:[[:space:]]*[RSD]' "/proc/${P_PID[inj_victim]}/status" 2>/dev/null ||
        die "the injection victim released its QP before the forged WRITE First reached it"
    say "  attacks: inject h2 -> the same QP ${INJECT_FIRST_GAP_S} s later, spoofed as $client_ip:" \
        "a WRITE First at PSN $first_psn, $mtu of $((INJECT_FIRST_PKTS * mtu)) bytes (path MTU" \
        "$mtu), never continued"
    wait_keys "$PHASE_DEADLINE_S" atk_rkey atk_rkey_victim inj_victim inj_client ||
        die "an attack or its victim failed"
    local key
    for key in atk_rkey atk_inject atk_spoof atk_first; do
        grep -m1 '^{' "$LOGS/$key.log" >> "$OUT/attacks.jsonl"
    done
    phase_end
}

# ---- tracers --------------------------------------------------------------------------------
# One insert-trace per host namespace (--netns): each emulated host is a clock domain of its
# own (--host hN), as on a real cluster; softverbs' library is probed from the start.
declare -A TRACE_PIDS
start_tracers() {
    local h output
    for h in $(cluster_hosts); do
        # Live: to the correlator's socket through the tee, which keeps trace-hN.jsonl.
        output=(-o "$OUT/trace-$h.jsonl")
        [ "$correlate" -eq 1 ] && [ "$scale_out" -eq 0 ] && output=(--unix "$SOCK_DIR/$h.sock")
        [ "$scale_out" -eq 1 ] && output+=("${BUS_PRODUCER_ARGS[@]}")  # its file, and the bus
        "$TRACE_BIN" "${output[@]}" --netns "$NAME-$h" --host "$h" \
            -l "$SV_DIR/libibverbs.so.1" > "$LOGS/insert-trace-$h.log" 2>&1 &
        TRACE_PIDS[$h]=$!
    done
    for h in $(cluster_hosts); do
        for _ in $(seq 300); do
            grep -q '"type":"trace_start"' "$OUT/trace-$h.jsonl" 2>/dev/null && continue 2
            kill -0 "${TRACE_PIDS[$h]}" 2>/dev/null || break
            sleep 0.1
        done
        die "insert-trace for $h did not start: $(tail -2 "$LOGS/insert-trace-$h.log" | tr '\n' ' ')"
    done
}
# insert-trace stops within 2 s of SIGINT where the kernel has uprobe_multi links (Linux
# 6.6; docs/insert-trace.md, "Stopping"); the demo holds it to that. A tracer still running
# after TRACE_KILL_S is killed.
TRACE_STOP_LIMIT_MS=2000
TRACE_KILL_S=20
declare -A TRACE_STOP_MS TRACE_STATUS
# SIGINT to every tracer at once, then each one's exit timed: TRACE_STOP_MS[h] (ms since the
# signal, at most ~30 ms late: the polling interval), TRACE_STATUS[h] (exit status, or
# "killed").
stop_tracers() {
    local h t0 left=("${!TRACE_PIDS[@]}") still
    [ ${#left[@]} -gt 0 ] || return 0
    t0=$(now_ns)
    for h in "${left[@]}"; do kill -INT "${TRACE_PIDS[$h]}" 2>/dev/null; done
    while [ ${#left[@]} -gt 0 ]; do
        still=()
        for h in "${left[@]}"; do
            if kill -0 "${TRACE_PIDS[$h]}" 2>/dev/null; then
                still+=("$h")
                continue
            fi
            TRACE_STOP_MS[$h]=$((($(now_ns) - t0) / 1000000))
            wait "${TRACE_PIDS[$h]}" 2>/dev/null
            TRACE_STATUS[$h]=$?
            unset "TRACE_PIDS[$h]"
        done
        left=("${still[@]}")
        [ ${#left[@]} -gt 0 ] || break
        if [ $(($(now_ns) - t0)) -ge $((TRACE_KILL_S * 1000000000)) ]; then
            for h in "${left[@]}"; do
                kill -KILL "${TRACE_PIDS[$h]}" 2>/dev/null
                wait "${TRACE_PIDS[$h]}" 2>/dev/null
                TRACE_STOP_MS[$h]=$((($(now_ns) - t0) / 1000000))
                TRACE_STATUS[$h]=killed
                unset "TRACE_PIDS[$h]"
            done
            break
        fi
        sleep 0.02
    done
}

# Reports each tracer's stop time; a tracer that took longer than TRACE_STOP_LIMIT_MS, exited
# with an error or was killed fails the demo, with its log. On a kernel without uprobe_multi
# links (the tracer's stop line says "perf_event") removing the probes takes ~0.1 s each,
# one at a time: slow stops are reported there, not failed.
check_tracers_stopped() {
    local h ms times="" failed=() why slow_old_kernel=0
    for h in $(cluster_hosts); do
        ms=${TRACE_STOP_MS[$h]:-}
        [ -n "$ms" ] || continue
        times="${times:+$times, }$h $((ms / 1000)).$(printf '%03d' $((ms % 1000))) s"
        why=""
        if [ "${TRACE_STATUS[$h]}" = killed ]; then
            why="still running ${TRACE_KILL_S} s after SIGINT: killed"
        elif [ "${TRACE_STATUS[$h]}" -ne 0 ]; then
            why="exited with status ${TRACE_STATUS[$h]}"
        elif [ "$ms" -gt "$TRACE_STOP_LIMIT_MS" ]; then
            if grep -q 'probes (perf_event) removed' "$LOGS/insert-trace-$h.log"; then
                slow_old_kernel=1
            else
                why="took $ms ms to stop (limit $TRACE_STOP_LIMIT_MS ms)"
            fi
        fi
        [ -n "$why" ] || continue
        failed+=("$h")
        echo "demo: insert-trace for $h $why; $LOGS/insert-trace-$h.log:" >&2
        sed 's/^/    /' "$LOGS/insert-trace-$h.log" >&2
    done
    say "insert-trace stopped (SIGINT to all at once): $times"
    [ "$slow_old_kernel" -eq 0 ] || say "  slower than $TRACE_STOP_LIMIT_MS ms: this kernel has no" \
        "uprobe_multi links (Linux < 6.6), its probes go one at a time (docs/insert-trace.md)"
    [ ${#failed[@]} -eq 0 ] ||
        die "insert-trace did not stop cleanly within $TRACE_STOP_LIMIT_MS ms on ${failed[*]}"
}

# ---- the live correlator -----------------------------------------------------------------------
# insert-correlate --listen runs for the whole cluster run: insert-dp inline and the five
# insert-trace send their records to it as they go (docs/correlation.md 7), and it tells
# alerts and congestion episodes as it decides them - on stderr, which the demo prints with
# the time since its start, and to the Alertmanager. Between the producers and its socket,
# `demo-workload.py tee` keeps what each one sent in its file (dp.jsonl, trace-hN.jsonl: a
# producer has one output) and forwards it on a connection of its own, so that the
# correlator sees one stream per producer, as with producers connected to it directly. At
# the end its records are correlated.jsonl, its page report.html and its terminal report
# report.txt; insert-correlate.log is its stderr (insert-correlate-times.tsv: each line with
# the wall time it was printed at).
#
# The live run's timing (docs/correlation.md 7; docs/demo.md, "Alert delays"): a window
# every LIVE_INTERVAL_S (0.5 s, not the default 1 s: half the wait for the next window after
# the watermark passed an attack), and a record may arrive LIVE_MAX_DELAY_S behind its
# stream (the default: the producers delivered records up to ~0.6 s behind their data on
# two cores at load 16-18, and a record behind a watermark that passed it stays unmatched).
LIVE_INTERVAL_S=0.5
LIVE_MAX_DELAY_S=1
# insert-dp evicts an endpoint idle this long, with its unfinished message: the injection
# from h2's own address, which its victim never answers, and the forged WRITE First, whose
# Last never comes, reach the correlator this long after them (insert-dp's default, 60 s,
# is for links that stay busy; docs/demo.md "Alert delays").
DP_IDLE_TIMEOUT=1
SOCK_DIR="" CORR_PID="" CORR_LOG_PID="" TEE_PID="" WATCH_PID="" AM_PID="" AM_DIR=""
declare -A LIVE_T

# Waits (at most SECONDS) for PID to exit, then kills it; returns its status.
wait_pid() {
    local pid=$1 limit=$2
    for _ in $(seq $((limit * 10))); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$pid" 2>/dev/null && { kill -KILL "$pid" 2>/dev/null; echo "demo: pid $pid killed after $limit s" >&2; }
    wait "$pid" 2>/dev/null
}

# The correlator's stderr: logged, timed, and printed with the demo's time; each line after
# PREFIX when given (an instance's name, --scale-out).
correlator_lines() {
    local line prefix=${1:-}
    while IFS= read -r line; do
        line=$prefix$line
        printf '%s\n' "$line" >> "$LOGS/insert-correlate.log"
        printf '%s000\t%s\n' "${EPOCHREALTIME/[.,]/}" "$line" >> "$LOGS/insert-correlate-times.tsv"
        say "$line"
    done
}

# A Prometheus Alertmanager on a free loopback port (as tests/correlator/output/
# alertmanager_test.py starts one): a minimal configuration without receivers, gossip off,
# its data in a temporary directory; stopped at the end. Started in the background: it is
# waited for before the correlator starts.
AM_BIN=${INSERT_ALERTMANAGER:-/usr/bin/prometheus-alertmanager}
alertmanager_start() {
    local port
    AM_DIR=$(mktemp -d /tmp/insert-demo-am.XXXXXX) || die "mktemp failed"
    printf 'route:\n  receiver: none\n  group_wait: 1h\nreceivers:\n  - name: none\n' > "$AM_DIR/am.yml"
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "$AM_BIN" --config.file="$AM_DIR/am.yml" --storage.path="$AM_DIR/data" \
        --web.listen-address="127.0.0.1:$port" --cluster.listen-address= > "$LOGS/alertmanager.log" 2>&1 &
    AM_PID=$!
    alertmanager=http://127.0.0.1:$port
}
alertmanager_ready() {
    python3 - "$alertmanager" "$AM_PID" <<'PY' || die "the Alertmanager did not start ($LOGS/alertmanager.log)"
import os, sys, time, urllib.request
url, pid = sys.argv[1], int(sys.argv[2])
end = time.monotonic() + 30
while time.monotonic() < end:
    try:
        os.kill(pid, 0)
    except OSError:
        sys.exit(1)
    try:
        with urllib.request.urlopen(url + "/-/ready", timeout=1) as r:
            if r.status == 200:
                sys.exit(0)
    except OSError:
        pass
    time.sleep(0.1)
sys.exit(1)
PY
}
alertmanager_stop() {
    [ -n "$AM_PID" ] && { kill -TERM "$AM_PID" 2>/dev/null; wait_pid "$AM_PID" 10; }
    AM_PID=""
    [ -n "$AM_DIR" ] && rm -rf "$AM_DIR"
    AM_DIR=""
}

live_start() {
    local h extra=() tees=("$SOCK_DIR/dp.sock=$OUT/dp.jsonl")
    [ -n "$alertmanager" ] && extra=(--alertmanager "$alertmanager")
    mkfifo "$SOCK_DIR/stderr" || die "mkfifo failed"
    correlator_lines < "$SOCK_DIR/stderr" &
    CORR_LOG_PID=$!
    # 50 ms congestion bins (default 10): here the observer shares two cores with the whole
    # cluster, and its timestamps stall for tens of milliseconds now and then (no message in
    # a bin); episodes end only after two bins without congestion.
    say "insert-correlate --listen SOCKET --records correlated.jsonl --html report.html" \
        "--congestion-bin $CONGESTION_BIN_MS --interval $LIVE_INTERVAL_S --max-delay $LIVE_MAX_DELAY_S ${extra[*]}"
    LIVE_T[start]=$(now_ns)
    "$CORRELATE_BIN" --listen "$SOCK_DIR/correlator.sock" --records "$OUT/correlated.jsonl" \
        --html "$OUT/report.html" --congestion-bin "$CONGESTION_BIN_MS" --interval "$LIVE_INTERVAL_S" \
        --max-delay "$LIVE_MAX_DELAY_S" "${extra[@]}" > "$OUT/report.txt" 2> "$SOCK_DIR/stderr" &
    CORR_PID=$!
    for _ in $(seq 100); do
        [ -S "$SOCK_DIR/correlator.sock" ] && break
        kill -0 "$CORR_PID" 2>/dev/null || die "insert-correlate exited at start ($LOGS/insert-correlate.log)"
        sleep 0.1
    done
    [ -S "$SOCK_DIR/correlator.sock" ] || die "insert-correlate --listen made no socket within 10 s"
    for h in $(cluster_hosts); do tees+=("$SOCK_DIR/$h.sock=$OUT/trace-$h.jsonl"); done
    python3 scripts/demo-workload.py tee "$SOCK_DIR/correlator.sock" "${tees[@]}" 2> "$LOGS/tee.log" &
    TEE_PID=$!
    for h in dp $(cluster_hosts); do
        for _ in $(seq 100); do
            [ -S "$SOCK_DIR/$h.sock" ] && continue 2
            kill -0 "$TEE_PID" 2>/dev/null || break
            sleep 0.1
        done
        die "the tee did not start: $(tail -2 "$LOGS/tee.log" | tr '\n' ' ')"
    done
    if [ -n "$alertmanager" ]; then
        python3 scripts/demo-workload.py watch-alertmanager "$alertmanager" "$LOGS/alertmanager.jsonl" "$T0" &
        WATCH_PID=$!
    fi
}

# After the producers stopped: the tee reads them to their end and waits until the
# correlator has read every stream; then the correlator stops (SIGTERM: the rest is decided
# as in a batch run, its Alertmanager queue gets --alertmanager-wait, 5 s), and the
# Alertmanager is polled once more.
live_stop() {
    [ -n "$TEE_PID" ] || return 0
    kill -TERM "$TEE_PID" 2>/dev/null
    wait_pid "$TEE_PID" 20
    TEE_RC=$?
    TEE_PID=""
    [ "$TEE_RC" -eq 0 ] || say "the tee could not hand everything to the correlator: $(tail -1 "$LOGS/tee.log")"
    LIVE_T[inputs_read]=$(now_ns)
    kill -TERM "$CORR_PID" 2>/dev/null
    wait_pid "$CORR_PID" 60
    CORR_RC=$?
    CORR_PID=""
    LIVE_T[end]=$(now_ns)
    wait "$CORR_LOG_PID" 2>/dev/null
    CORR_LOG_PID=""
    if [ -n "$WATCH_PID" ]; then
        kill -TERM "$WATCH_PID" 2>/dev/null
        wait_pid "$WATCH_PID" 10
        WATCH_PID=""
    fi
}

# ---- run ----------------------------------------------------------------------------------------
ensure_built "${NEEDED[@]}"
command -v ib_write_bw >/dev/null || die "perftest is not installed (scripts/setup.sh)"
TRACE_BIN=$build/hosttrace/insert-trace
ATTACK_BIN=$build/bench/attack/insert-attack
CORRELATE_BIN=$build/correlator/insert-correlate
SV_DIR=$build/hosttrace/softverbs
say "packages and binaries ready ($build)"
NAME="dm$(($$ % 100000000))"
OUT=${out:-out/demo-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT/logs" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
LOGS=$OUT/logs
: > "$OUT/attacks.jsonl"
rm -f "$LOGS/insert-correlate.log" "$LOGS/insert-correlate-times.tsv" "$LOGS/alertmanager.jsonl" \
    "$OUT/alert-delays.jsonl"
CORR_RC=0 TEE_RC=0

CLEANED=""
cleanup() {
    [ -n "$CLEANED" ] && return
    CLEANED=1
    local key pid
    for key in "${KEYS[@]}"; do kill -KILL "${P_PID[$key]}" 2>/dev/null; done
    for key in "${KEYS[@]}"; do wait "${P_PID[$key]}" 2>/dev/null; done  # quietly: no "Killed"
    stop_tracers
    cluster_dp_stop
    for pid in "$TEE_PID" "$CORR_PID" "$WATCH_PID"; do [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null; done
    for pid in "$TEE_PID" "$CORR_PID" "$WATCH_PID" "$CORR_LOG_PID"; do [ -n "$pid" ] && wait_pid "$pid" 10; done
    [ "$scale_out" -eq 0 ] || bus_cleanup
    alertmanager_stop
    [ -n "$SOCK_DIR" ] && rm -rf "$SOCK_DIR"
    cluster_down "$NAME"
    tenants_down
}
trap cleanup EXIT
trap 'echo "demo: interrupted" >&2; exit 130' INT TERM

if [ "$correlate" -eq 1 ]; then
    [ "$own_alertmanager" -eq 1 ] && [ ! -x "$AM_BIN" ] &&
        say "no Alertmanager at $AM_BIN (prometheus-alertmanager, scripts/setup.sh): alerts on the terminal only"
    [ "$own_alertmanager" -eq 1 ] && [ -x "$AM_BIN" ] && alertmanager_start
    SOCK_DIR=$(mktemp -d /tmp/insert-demo.XXXXXX) || die "mktemp failed"
fi
cluster_exists "$NAME" && cluster_down "$NAME"
cluster_up "$NAME" || die "could not create the cluster"
say "cluster $NAME: h1 h2 h3 = [insert-dp inline] = h4 h5 (tbf $CLUSTER_TBF_RATE toward h4); output $OUT"
dp_records=$OUT/dp.jsonl
if [ "$correlate" -eq 1 ]; then
    if [ -n "$AM_PID" ]; then
        alertmanager_ready
        say "Alertmanager $alertmanager (prometheus-alertmanager, its log in logs/alertmanager.log)"
    fi
    if [ "$scale_out" -eq 1 ]; then
        bus_up
        instances_start
    else
        live_start
        dp_records=unix:$SOCK_DIR/dp.sock
    fi
fi
cluster_dp_start "$NAME" "$LOGS/insert-dp.log" --records "$dp_records" "${BUS_PRODUCER_ARGS[@]}" --interval 1 \
    --idle-timeout "$DP_IDLE_TIMEOUT" ||
    die "insert-dp inline did not start ($LOGS/insert-dp.log)"
cluster_wait_reach "$NAME" h1 "$(cluster_ip h4)" "$(cluster_ip h5)" || die "no path through insert-dp"
tenants_up
start_tracers
[ "$scale_out" -eq 0 ] || instances_wait_partitions
if [ "$scale_out" -eq 1 ]; then
    say "insert-dp inline in $NAME-mid, insert-trace in every host namespace, both to their files" \
        "and the bus, insert-correlate ${BUS_INSTANCES[*]} on its partitions: running the workload"
elif [ "$correlate" -eq 1 ]; then
    say "insert-dp inline in $NAME-mid, insert-trace in every host namespace, both to insert-correlate" \
        "live: running the workload"
else
    say "insert-dp inline in $NAME-mid, insert-trace in every host namespace: running the workload"
fi

phase_pairs
phase_incast
phase_attacks

# softverbs reports a process's last trace records at its exit and insert-trace notices the
# exit within 250 ms: give it that before stopping.
sleep 0.6
ip netns exec "$NAME-swr" tc -s qdisc show dev "p${CLUSTER_INCAST_HOST#h}" > "$LOGS/tbf.txt" 2>&1
LIVE_T[producers_stop]=$(now_ns)
stop_tracers
check_tracers_stopped
cluster_dp_stop || say "insert-dp exited with an error: $LOGS/insert-dp.log"
if [ "$scale_out" -eq 1 ]; then
    instances_stop
    if [ "$TEE_RC" -eq 0 ]; then
        say "producers stopped; insert-correlate ${BUS_INSTANCES[*]} consumed every message and stopped" \
            "(exit ${INST_RC[*]}); the bus stopped"
    else
        say "producers stopped; insert-correlate ${BUS_INSTANCES[*]} stopped (exit ${INST_RC[*]})" \
            "with messages left on the bus; the bus stopped"
    fi
elif [ "$correlate" -eq 1 ]; then
    live_stop
    if [ "$TEE_RC" -eq 0 ]; then
        say "insert-dp stopped; insert-correlate read every record and stopped (exit $CORR_RC)"
    else
        say "insert-dp stopped; insert-correlate stopped (exit $CORR_RC)"
    fi
fi
cluster_down "$NAME"
tenants_down
say "cluster $NAME deleted"
T1=$(now_ns)

{
    printf 'cluster\t%s\n' "$NAME"
    printf 'trace_hosts\t%s\n' "$(cluster_hosts)"
    for t in "${TENANTS[@]}"; do printf 'cgroup_%s\t%s\n' "$t" "${CG_ID[$t]:-}"; done
    printf 'hosts\t%s\n' "$(cluster_hosts)"
    printf 'left\t%s\n' "$CLUSTER_LEFT"
    for h in $(cluster_hosts); do
        printf 'ips_%s\t%s\n' "$h" "$(for s in $(seq 0 $((CLUSTER_SLOTS - 1))); do cluster_ip "$h" "$s"; done | tr '\n' ' ')"
    done
    printf 'incast_host\t%s\n' "$CLUSTER_INCAST_HOST"
    printf 'incast_ecn\t%s\n' "$INCAST_ECN"
    printf 'tbf_rate\t%s\ntbf_burst\t%s\ntbf_limit\t%s\n' "$CLUSTER_TBF_RATE" "$CLUSTER_TBF_BURST" "$CLUSTER_TBF_LIMIT"
    printf 't_start_ns\t%s\nt_end_ns\t%s\n' "$T0" "$T1"
    if [ "$correlate" -eq 1 ]; then
        printf 'live_start_ns\t%s\nlive_producers_stop_ns\t%s\nlive_inputs_read_ns\t%s\nlive_end_ns\t%s\n' \
            "${LIVE_T[start]}" "${LIVE_T[producers_stop]}" "${LIVE_T[inputs_read]:-}" "${LIVE_T[end]:-}"
        printf 'live_interval_s\t%s\nlive_max_delay_s\t%s\nalertmanager\t%s\n' "$LIVE_INTERVAL_S" \
            "$LIVE_MAX_DELAY_S" "$alertmanager"
        [ "$scale_out" -eq 0 ] || printf 'scale_out\t%s\nbus\t%s\n' "${BUS_INSTANCES[*]}" "$BUS_URLS"
    fi
} > "$LOGS/meta.tsv"
for key in "${KEYS[@]}"; do
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$key" "${P_PID[$key]}" "${P_ROW[$key]}" \
        "${P_START[$key]}" "${P_END[$key]:-}" "${P_STATUS[$key]:-}" "${P_ENV[$key]}" "${P_ARGS[$key]}" \
        "${P_TENANT[$key]}"
done > "$LOGS/procs.tsv"
for p in "${PHASES[@]}"; do printf '%s\t%s\t%s\n' "$p" "${PH_START[$p]}" "${PH_END[$p]:-}"; done > "$LOGS/phases.tsv"
python3 scripts/demo-workload.py "$OUT" || die "could not write workload.json"

msgs=$(grep -c '"type":"msg"' "$OUT/dp.jsonl")
verbs=$(cat "$OUT"/trace-h*.jsonl | grep -c '"type":"verb"')
say "collected in $(((T1 - T0) / 1000000000)) s: dp.jsonl ($msgs msg records), trace-h1..h5.jsonl" \
    "($verbs verb records), attacks.jsonl ($(wc -l < "$OUT/attacks.jsonl") attacks), workload.json, logs/ in $OUT"
if [ "$correlate" -eq 1 ]; then
    echo
    if [ "$scale_out" -eq 1 ]; then
        # The instances' reports are per partition (report-c1.txt, report-c2.txt); the
        # verdicts from their records together, and one page of them.
        python3 scripts/demo-bus.py verdicts "$OUT/correlated.jsonl"
        "$build/correlator/insert-report" "$OUT/correlated.jsonl" --html "$OUT/report.html" ||
            die "insert-report failed"
    else
        cat "$OUT/report.txt"
    fi
    echo
    [ "$CORR_RC" -eq 0 ] || die "insert-correlate exited $CORR_RC: $LOGS/insert-correlate.log"
    say "records: $OUT/correlated.jsonl; report: $OUT/report.html (open it in a browser; it loads" \
        "nothing from anywhere)"
    if [ -n "$alertmanager" ]; then
        say "alert delays: from each attack's first packet at insert-dp inline to the alert's first" \
            "listing by the Alertmanager (polled every 100 ms; docs/demo.md, \"Alert delays\"):"
        python3 scripts/demo-workload.py alert-delays "$OUT" ||
            say "an attack's alert never reached the Alertmanager"
    else
        say "alert delays: from each attack's first packet at insert-dp inline to the correlator's" \
            "line (docs/demo.md, \"Alert delays\"):"
        python3 scripts/demo-workload.py alert-delays "$OUT" || say "an attack's alert was never told"
    fi
    say "the latency application in the incast (its e2e records; the incast on the wire from" \
        "insert-dp's; docs/demo.md, \"The latency application\"):"
    python3 scripts/demo-workload.py latency "$OUT" ||
        say "the latency application's story is incomplete (latency.json)"
fi
alertmanager_stop
rm -rf "$SOCK_DIR"
SOCK_DIR=""
CLEANED=1
say "done"
exit 0

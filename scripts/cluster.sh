#!/usr/bin/env bash
# scripts/cluster.sh: an emulated RoCE cluster on this one machine, with insert-dp inline as
# the only path between its two halves.
#
#   NAME-h1 ─┐                                      ┌─ NAME-h4  (tbf: the incast bottleneck)
#   NAME-h2 ─┼─ NAME-swl [br0] ─ left:NAME-mid:right ─ [br0] NAME-swr ─┤
#   NAME-h3 ─┘           insert-dp inline here      └─ NAME-h5
#
# Hosts are network namespaces with one veth (eth0, MTU 9000: RoCE's 4 KB path MTU needs
# bigger frames) on a bridge namespace; the bridges meet only through the two interfaces
# of NAME-mid, where `insert-dp inline --iface left --iface right` forwards every frame
# (ARP and perftest's TCP exchange included), so every left<->right packet crosses it and
# nothing flows between the halves while it is not running. Host hN has the addresses
# 10.88.0.N, 10.88.0.1N, 10.88.0.2N and 10.88.0.3N ("slots" 0-3): softverbs binds IP:4791
# per process, so a host runs one verbs process per address. The link from NAME-swr to
# NAME-h4 is rate-limited with tbf (this kernel has tbf and htb, no RED/netem/fq_codel),
# so traffic from several left hosts to h4 queues there: the incast.
#
# CLI (root):
#   cluster.sh up NAME                 create (NAME: 1-10 of [a-z0-9]; fails if it exists)
#   cluster.sh down NAME               stop what runs inside, delete everything (idempotent)
#   cluster.sh exec NAME HOST CMD...   run CMD in HOST (h1..h5, swl, mid, swr)
#   cluster.sh dp NAME [OPTIONS...]    insert-dp inline in NAME-mid, in the foreground
#   cluster.sh ip HOST [SLOT]          print HOST's address in slot SLOT (default 0)
# Library: `source scripts/cluster.sh` defines the cluster_* functions below and runs
# nothing. Knobs (environment): CLUSTER_MTU (9000), CLUSTER_TBF_RATE (200mbit),
# CLUSTER_TBF_BURST (64kb), CLUSTER_TBF_LIMIT (4mb: bytes queued before tbf drops),
# INSERT_BUILD_ROOT (build) for insert-dp.

CLUSTER_LEFT="h1 h2 h3"
CLUSTER_RIGHT="h4 h5"
CLUSTER_INCAST_HOST="h4"
CLUSTER_PREFIX="10.88.0"
CLUSTER_SLOTS=4
CLUSTER_MTU="${CLUSTER_MTU:-9000}"
CLUSTER_TBF_RATE="${CLUSTER_TBF_RATE:-200mbit}"
CLUSTER_TBF_BURST="${CLUSTER_TBF_BURST:-64kb}"
CLUSTER_TBF_LIMIT="${CLUSTER_TBF_LIMIT:-4mb}"

cluster_err() { echo "cluster: $*" >&2; }

# Address of HOST (h1..h9) in SLOT (0..CLUSTER_SLOTS-1): 10.88.0.<SLOT><N>.
cluster_ip() {
    local n=${1#h} slot=${2:-0}
    case "$n" in [1-9]) ;; *) cluster_err "no host '$1' (h1..h9)"; return 2 ;; esac
    if [ "$slot" -lt 0 ] || [ "$slot" -ge "$CLUSTER_SLOTS" ]; then
        cluster_err "no slot '$slot' (0..$((CLUSTER_SLOTS - 1)))"
        return 2
    fi
    if [ "$slot" -eq 0 ]; then echo "$CLUSTER_PREFIX.$n"; else echo "$CLUSTER_PREFIX.$slot$n"; fi
}

cluster_hosts() { echo "$CLUSTER_LEFT $CLUSTER_RIGHT"; }
cluster_ns() { echo "$1-$2"; }  # NAME HOST -> namespace name

cluster_check_name() {
    [[ "$1" =~ ^[a-z0-9]{1,10}$ ]] && return 0
    cluster_err "bad cluster name '$1' (1-10 characters of [a-z0-9])"
    return 2
}

cluster_exists() { ip netns list 2>/dev/null | grep -q "^$1-mid\b"; }

# No IPv6 (no DAD, router or MLD frames on the wire), no offloads (the frames on the wire
# are the ones sent, which insert-dp sees one by one), MTU, up.
cluster_quiet_ns() {
    local ns=$1
    shift
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
        net.ipv6.conf.default.disable_ipv6=1 >/dev/null || return 1
    ip -n "$ns" link set lo up || return 1
    local dev
    for dev in "$@"; do
        # Checksum offload must be off: a veth hands partially checksummed TCP segments to
        # the next hop, which insert-dp's af_packet ports forward as they are (bad checksums).
        ip netns exec "$ns" ethtool -K "$dev" tso off gso off gro off tx off rx off \
            >/dev/null 2>&1 || { cluster_err "ethtool -K $dev failed in $ns (is ethtool installed?)"; return 1; }
        ip -n "$ns" link set "$dev" mtu "$CLUSTER_MTU" up || return 1
    done
}

# A veth pair between two namespaces: cluster_link NAME NS_A DEV_A NS_B DEV_B. The pair is
# made under temporary unique names in this namespace, then moved and renamed.
cluster_link() {
    local name=$1 ns_a=$2 dev_a=$3 ns_b=$4 dev_b=$5
    local tmp_a="${name:0:8}a$RANDOM" tmp_b="${name:0:8}b$RANDOM"  # at most 15 characters
    ip link add "$tmp_a" type veth peer name "$tmp_b" || return 1
    ip link set "$tmp_a" netns "$ns_a" name "$dev_a" &&
        ip link set "$tmp_b" netns "$ns_b" name "$dev_b" || {
        ip link del "$tmp_a" 2>/dev/null
        return 1
    }
}

cluster_bridge() {  # NS: a bridge br0 without STP, so ports forward at once
    ip -n "$1" link add br0 type bridge stp_state 0 forward_delay 0 mcast_snooping 0 &&
        ip -n "$1" link set br0 mtu "$CLUSTER_MTU" up
}

cluster_wait_carrier() {  # NS DEV...: bounded wait (5 s) for every link to be up
    local ns=$1 dev
    shift
    for _ in $(seq 50); do
        for dev in "$@"; do
            ip -n "$ns" link show "$dev" 2>/dev/null | grep -q LOWER_UP || continue 2
        done
        return 0
    done
    cluster_err "links $* in $ns did not come up"
    return 1
}

cluster_up() {
    local name=$1 h n slot mac
    cluster_check_name "$name" || return 2
    if cluster_exists "$name"; then
        cluster_err "cluster '$name' exists (cluster.sh down $name)"
        return 1
    fi
    local all_ns=("$name-swl" "$name-mid" "$name-swr")
    for h in $(cluster_hosts); do all_ns+=("$name-$h"); done
    for ns in "${all_ns[@]}"; do ip netns add "$ns" || return 1; done

    cluster_bridge "$name-swl" && cluster_bridge "$name-swr" || return 1
    cluster_link "$name" "$name-swl" trunk "$name-mid" left || return 1
    cluster_link "$name" "$name-swr" trunk "$name-mid" right || return 1
    cluster_quiet_ns "$name-mid" left right || return 1
    cluster_quiet_ns "$name-swl" trunk && ip -n "$name-swl" link set trunk master br0 || return 1
    cluster_quiet_ns "$name-swr" trunk && ip -n "$name-swr" link set trunk master br0 || return 1
    local sw
    for h in $(cluster_hosts); do
        n=${h#h}
        case " $CLUSTER_LEFT " in *" $h "*) sw=swl ;; *) sw=swr ;; esac
        cluster_link "$name" "$name-$h" eth0 "$name-$sw" "p$n" || return 1
        # Fixed MACs make captures readable: 02:88:00:00:00:0N is host N.
        mac=$(printf '02:88:00:00:00:%02x' "$n")
        ip -n "$name-$h" link set eth0 address "$mac" || return 1
        cluster_quiet_ns "$name-$h" eth0 || return 1
        cluster_quiet_ns "$name-$sw" "p$n" && ip -n "$name-$sw" link set "p$n" master br0 || return 1
        for slot in $(seq 0 $((CLUSTER_SLOTS - 1))); do
            ip -n "$name-$h" addr add "$(cluster_ip "$h" "$slot")/24" dev eth0 || return 1
        done
    done
    # The incast bottleneck: frames queue in tbf on the last link toward the victim host
    # (after insert-dp: the observer sees the senders' full rate, the victim the drained one).
    local n_incast=${CLUSTER_INCAST_HOST#h}
    ip netns exec "$name-swr" tc qdisc add dev "p$n_incast" root tbf rate "$CLUSTER_TBF_RATE" \
        burst "$CLUSTER_TBF_BURST" limit "$CLUSTER_TBF_LIMIT" || return 1

    cluster_wait_carrier "$name-mid" left right || return 1
    for h in $(cluster_hosts); do cluster_wait_carrier "$name-$h" eth0 || return 1; done
    return 0
}

# Signals every process inside the cluster's namespaces (TERM, then KILL after 5 s), then
# deletes the namespaces (their veths go with them) and insert-dp's DPDK runtime directory.
cluster_down() {
    local name=$1 ns pids
    cluster_check_name "$name" || return 2
    local mine
    mine=$(ip netns list 2>/dev/null | awk -v p="$name-" 'index($1, p) == 1 {print $1}')
    for sig in TERM KILL; do
        pids=""
        for ns in $mine; do pids="$pids $(ip netns pids "$ns" 2>/dev/null)"; done
        pids=$(echo $pids)
        [ -z "$pids" ] && break
        # shellcheck disable=SC2086
        kill -s "$sig" $pids 2>/dev/null
        [ "$sig" = KILL ] && break
        for _ in $(seq 50); do
            local alive=""
            for p in $pids; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
            [ -z "$alive" ] && break
            sleep 0.1
        done
    done
    for ns in $mine; do ip netns del "$ns" 2>/dev/null; done
    rm -rf "/var/run/dpdk/$(cluster_dp_prefix "$name")"
    return 0
}

cluster_exec() {  # NAME HOST CMD...
    local name=$1 host=$2
    shift 2
    ip netns exec "$name-$host" "$@"
}

cluster_dp_bin() { echo "${INSERT_BUILD_ROOT:-build}/dataplane/tools/insert-dp"; }
# insert-dp's EAL file prefix: fixed per cluster, so that teardown can always remove
# /var/run/dpdk/<prefix>, even after a crash.
cluster_dp_prefix() { echo "insert-cluster-$1"; }

# Starts insert-dp inline in NAME-mid in the background and waits (bounded, 60 s) until it
# forwards: cluster_dp_start NAME LOG [insert-dp options...]. Sets CLUSTER_DP_PID.
# The endpoint tables are sized for a demo (--max-endpoints 4096: a few MiB locked, not
# the default's 1038 MiB per worker).
cluster_dp_start() {
    local name=$1 log=$2
    shift 2
    local dp
    dp=$(cluster_dp_bin)
    [ -x "$dp" ] || { cluster_err "no insert-dp at $dp (build it, or set INSERT_BUILD_ROOT)"; return 1; }
    # Two insert-dp on the same interfaces would each forward every frame: duplicates.
    if [ -n "$(ip netns pids "$name-mid" 2>/dev/null)" ]; then
        cluster_err "something already runs in $name-mid (pids $(ip netns pids "$name-mid" | tr '\n' ' '))"
        return 1
    fi
    ip netns exec "$name-mid" "$dp" inline --iface left --iface right --no-view \
        --max-endpoints 4096 "$@" -- --file-prefix="$(cluster_dp_prefix "$name")" \
        > "$log" 2>&1 &
    CLUSTER_DP_PID=$!
    for _ in $(seq 600); do
        grep -q "running on" "$log" 2>/dev/null && return 0
        kill -0 "$CLUSTER_DP_PID" 2>/dev/null || break
        sleep 0.1
    done
    cluster_err "insert-dp did not start: $(tail -1 "$log")"
    kill -KILL "$CLUSTER_DP_PID" 2>/dev/null
    wait "$CLUSTER_DP_PID" 2>/dev/null
    CLUSTER_DP_PID=""
    return 1
}

# Stops it (SIGTERM: it drains and writes every record; KILL after 30 s). Returns its status.
cluster_dp_stop() {
    local pid=${CLUSTER_DP_PID:-}
    [ -n "$pid" ] || return 0
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 300); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        cluster_err "insert-dp ignored SIGTERM for 30 s: killed"
        kill -KILL "$pid" 2>/dev/null
    fi
    wait "$pid" 2>/dev/null
    local rc=$?
    CLUSTER_DP_PID=""
    return $rc
}

# Bounded wait (10 s) until HOST reaches every address given: ARP and ping cross insert-dp.
cluster_wait_reach() {
    local name=$1 host=$2 dst
    shift 2
    for dst in "$@"; do
        for _ in $(seq 20); do
            ip netns exec "$name-$host" ping -c 1 -W 0.5 "$dst" >/dev/null 2>&1 && continue 2
        done
        cluster_err "$host cannot reach $dst through insert-dp"
        return 1
    done
}

cluster_main() {
    local cmd=${1:-} name=${2:-}
    case "$cmd" in
        up | down | exec | dp)
            [ -n "$name" ] || { echo "usage: cluster.sh $cmd NAME ..." >&2; return 2; }
            [ "$(id -u)" -eq 0 ] || { cluster_err "needs root (network namespaces)"; return 2; }
            cluster_check_name "$name" || return 2
            ;;
    esac
    case "$cmd" in
        up)
            cluster_up "$name" || {
                cluster_down "$name"
                cluster_err "could not create cluster '$name'"
                return 1
            }
            echo "cluster $name: $(cluster_hosts) ($CLUSTER_PREFIX.N, .1N, .2N, .3N), mid, swl, swr;" \
                "left and right are joined only by insert-dp: cluster.sh dp $name"
            ;;
        down) cluster_down "$name" ;;
        exec)
            [ $# -ge 4 ] || { echo "usage: cluster.sh exec NAME HOST CMD..." >&2; return 2; }
            shift 2
            local host=$1
            shift
            exec ip netns exec "$name-$host" "$@"
            ;;
        dp)
            shift 2
            exec ip netns exec "$name-mid" "$(cluster_dp_bin)" inline --iface left --iface right \
                --max-endpoints 4096 "$@" -- --file-prefix="$(cluster_dp_prefix "$name")"
            ;;
        ip) cluster_ip "$2" "${3:-0}" ;;
        *)
            echo "usage: cluster.sh up NAME | down NAME | exec NAME HOST CMD... | dp NAME [OPTIONS] | ip HOST [SLOT]" >&2
            return 2
            ;;
    esac
}

# Run as a command (not sourced).
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    cluster_main "$@"
    exit $?
fi

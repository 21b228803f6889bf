#!/usr/bin/env bash
# Two network namespaces joined by a veth pair, for running softverbs applications
# "between two hosts" on one machine. Meant to be sourced by tests and by hand:
#
#   source scripts/netns-softverbs.sh
#   sv_netns_up            # creates ${SV_NS_A} (10.77.0.1) and ${SV_NS_B} (10.77.0.2)
#   sv_in_a ib_write_bw -F &  sv_in_b ib_write_bw -F 10.77.0.1
#   sv_netns_down          # also runs on EXIT once sv_netns_up has been called
#
# Names are unique per shell (sva<pid>/svb<pid>) so parallel runs never collide; the
# namespaces (and with them the veth pair) are always deleted on exit. Needs root.
# SV_MTU sets the veth MTU (default 9000: room for RoCE's 4096-byte path MTU).

SV_NS_A="sva$$"
SV_NS_B="svb$$"
SV_IP_A="10.77.0.1"
SV_IP_B="10.77.0.2"
SV_MTU="${SV_MTU:-9000}"
SV_LIB_DIR="${SV_LIB_DIR:-${INSERT_BUILD_ROOT:-build}/hosttrace/softverbs}"

sv_netns_down() {
    ip netns del "$SV_NS_A" 2>/dev/null
    ip netns del "$SV_NS_B" 2>/dev/null
    return 0
}

sv_netns_up() {
    trap sv_netns_down EXIT
    ip netns add "$SV_NS_A" && ip netns add "$SV_NS_B" || return 1
    ip link add "v${SV_NS_A}" type veth peer name "v${SV_NS_B}" || return 1
    ip link set "v${SV_NS_A}" netns "$SV_NS_A" && ip link set "v${SV_NS_B}" netns "$SV_NS_B" || return 1
    ip -n "$SV_NS_A" link set lo up && ip -n "$SV_NS_B" link set lo up || return 1
    ip -n "$SV_NS_A" link set "v${SV_NS_A}" mtu "$SV_MTU" up || return 1
    ip -n "$SV_NS_B" link set "v${SV_NS_B}" mtu "$SV_MTU" up || return 1
    ip -n "$SV_NS_A" addr add "$SV_IP_A/24" dev "v${SV_NS_A}" || return 1
    ip -n "$SV_NS_B" addr add "$SV_IP_B/24" dev "v${SV_NS_B}" || return 1
    # Wait (bounded) until the carrier is up on both sides.
    for _ in $(seq 50); do
        ip -n "$SV_NS_A" link show "v${SV_NS_A}" | grep -q LOWER_UP &&
            ip -n "$SV_NS_B" link show "v${SV_NS_B}" | grep -q LOWER_UP && return 0
        sleep 0.1
    done
    echo "netns-softverbs: veth link did not come up" >&2
    return 1
}

# Runs a command in namespace A or B with softverbs as libibverbs.
sv_in_a() { ip netns exec "$SV_NS_A" env LD_LIBRARY_PATH="$SV_LIB_DIR" "$@"; }
sv_in_b() { ip netns exec "$SV_NS_B" env LD_LIBRARY_PATH="$SV_LIB_DIR" "$@"; }

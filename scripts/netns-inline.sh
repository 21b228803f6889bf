#!/bin/sh
# Topology for the live modes: host A - veth - [insert-dp in namespace MID] - veth - host B.
#
#   NAME-a: a0  <-veth->  a1 :NAME-mid: b1  <-veth->  b0 :NAME-b
#
# insert-dp inline runs in NAME-mid on a1 and b1 (insert-dp monitor on a1 alone); traffic
# is replayed into a0 and captured on b0. MTU 9000 (RoCE's 4 KB path MTU needs frames
# beyond 4 KB), IPv6 off and segmentation offloads off so the only frames on the wire are
# the ones a test sends, byte for byte.
#
# usage: netns-inline.sh up NAME [MTU]     create (fails if NAME-* exist)
#        netns-inline.sh down NAME         remove (idempotent)
#        netns-inline.sh exec NAME a|b|mid COMMAND...
set -eu

cmd=${1:-}
name=${2:-}
[ -n "$cmd" ] && [ -n "$name" ] || { echo "usage: $0 up|down|exec NAME ..." >&2; exit 2; }
mtu=${3:-9000}

quiet_ns() {  # namespace: no IPv6 (no DAD/RS/MLD frames), no offload reshaping
    ns=$1; shift
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    for dev in "$@"; do
        ip netns exec "$ns" ethtool -K "$dev" tso off gso off gro off tx off rx off >/dev/null 2>&1 || true
        ip -n "$ns" link set "$dev" mtu "$mtu" up
    done
    ip -n "$ns" link set lo up
}

case $cmd in
up)
    for r in a mid b; do ip netns add "$name-$r"; done
    ip link add "${name}a0" type veth peer name "${name}a1"
    ip link add "${name}b0" type veth peer name "${name}b1"
    ip link set "${name}a0" netns "$name-a" name a0
    ip link set "${name}a1" netns "$name-mid" name a1
    ip link set "${name}b1" netns "$name-mid" name b1
    ip link set "${name}b0" netns "$name-b" name b0
    quiet_ns "$name-a" a0
    quiet_ns "$name-mid" a1 b1
    quiet_ns "$name-b" b0
    ;;
down)
    for r in a mid b; do ip netns del "$name-$r" 2>/dev/null || true; done
    ;;
exec)
    role=${3:-}
    shift 3
    exec ip netns exec "$name-$role" "$@"
    ;;
*)
    echo "usage: $0 up|down|exec NAME ..." >&2
    exit 2
    ;;
esac

# shellcheck shell=bash
# scripts/demo-bus.sh: the bus and the correlator instances of `scripts/demo.sh --scale-out`
# (docs/scale-out.md "Demo"), sourced by scripts/demo.sh after scripts/cluster.sh; uses its
# NAME, OUT, LOGS, say, die, wait_pid, correlator_lines and the cluster's addresses.
#
# A 3-node NATS JetStream cluster on this machine: a configuration file and a store
# directory per node in OUT/bus/, client connections on BUS_IP, the cluster's routes and the
# monitoring ports on the loopback. BUS_IP is the machine's end of a veth link into the
# observer's namespace (NAME-mid): insert-dp inline runs there and reaches no loopback but
# its own, as an observation point reaches its bus over a management network. Everything
# else (the tracers, the instances) runs in the machine's namespace, where BUS_IP is local.

BUS_NODES=3
BUS_IP=10.88.255.1
BUS_PEER_IP=10.88.255.2  # the observer's end, in NAME-mid
BUS_REPLICAS=3
# Two instances, each the candidate for every other partition: with the hosts file's
# partitions of the demo's hosts (h2 0, h4 2 - the incast's destination - and h1 1, h3 3,
# h5 5 of 8) both decide alerts and congestion, and a partition never moves from one
# instance to the other, so that their --records files together hold each record once.
BUS_PARTITIONS=8
BUS_INSTANCES=(c1 c2)
declare -A BUS_CANDIDATES=([c1]=0,2,4,6 [c2]=1,3,5,7)
BUS_DIR="" BUS_URLS="" BUS_HTTP_PORTS=() BUS_PIDS=() BUS_PRODUCER_ARGS=()
declare -A INST_PID INST_LOG_PID INST_RC

# The deployment's hosts file (--nats-hosts): each emulated host's addresses are one host,
# its slot-0 address first, so that a host's records share one partition (a congestion
# episode is a node's).
bus_hosts_file() {
    local h s
    for h in $(cluster_hosts); do
        printf '%s' "$(cluster_ip "$h" 0)"
        for s in $(seq 1 $((CLUSTER_SLOTS - 1))); do printf ' %s' "$(cluster_ip "$h" "$s")"; done
        printf '\n'
    done
}

# The link, the configurations, the nodes; returns once they agree on a JetStream meta
# leader (streams with 3 replicas can be made).
bus_up() {
    local ports i j routes leader
    command -v nats-server > /dev/null || die "nats-server is not installed (scripts/setup.sh)"
    ip link add "b$NAME" type veth peer name bus netns "$NAME-mid" &&
        ip addr add "$BUS_IP/30" dev "b$NAME" && ip link set "b$NAME" up &&
        ip -n "$NAME-mid" addr add "$BUS_PEER_IP/30" dev bus && ip -n "$NAME-mid" link set bus up ||
        die "cannot link $NAME-mid to the bus ($BUS_IP)"
    BUS_DIR=$OUT/bus
    mkdir -p "$BUS_DIR" || die "cannot create $BUS_DIR"
    bus_hosts_file > "$BUS_DIR/hosts"
    mapfile -t ports < <(python3 scripts/demo-bus.py free-ports $((3 * BUS_NODES)))
    [ ${#ports[@]} -eq $((3 * BUS_NODES)) ] || die "no free ports for the bus"
    BUS_URLS="" BUS_HTTP_PORTS=()
    for i in $(seq 0 $((BUS_NODES - 1))); do
        routes=""
        for j in $(seq 0 $((BUS_NODES - 1))); do
            [ "$j" -eq "$i" ] || routes="${routes:+$routes, }nats-route://127.0.0.1:${ports[$((3 * j + 2))]}"
        done
        cat > "$BUS_DIR/n$i.conf" <<EOF
# node $i of the demo's bus (scripts/demo-bus.sh)
server_name: $NAME-n$i
listen: $BUS_IP:${ports[$((3 * i))]}
http: 127.0.0.1:${ports[$((3 * i + 1))]}
jetstream { store_dir: "$BUS_DIR/n$i-store" }
cluster {
  name: $NAME-bus
  listen: 127.0.0.1:${ports[$((3 * i + 2))]}
  routes: [$routes]
}
EOF
        BUS_URLS="${BUS_URLS:+$BUS_URLS,}nats://$BUS_IP:${ports[$((3 * i))]}"
        BUS_HTTP_PORTS+=("${ports[$((3 * i + 1))]}")
        nats-server -c "$BUS_DIR/n$i.conf" > "$LOGS/nats-n$i.log" 2>&1 &
        BUS_PIDS+=($!)
    done
    # What the producers add to their command lines: publish to the bus too, the stream
    # with 3 replicas (made by the first of them), the demo's hosts file.
    BUS_PRODUCER_ARGS=(--nats "$BUS_URLS" --nats-replicas "$BUS_REPLICAS" --nats-hosts "$BUS_DIR/hosts")
    leader=$(python3 scripts/demo-bus.py ready 30 "${BUS_HTTP_PORTS[@]}") ||
        die "the bus has no JetStream meta leader after 30 s ($leader; $LOGS/nats-n*.log)"
    say "bus: $BUS_NODES nats-server nodes $BUS_URLS (JetStream meta leader $leader; configurations" \
        "and stores in bus/, logs in logs/nats-n*.log)"
}

bus_down() {
    local pid
    for pid in "${BUS_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
    for pid in "${BUS_PIDS[@]}"; do wait_pid "$pid" 10; done
    BUS_PIDS=()
}


# The instances: live runs over the bus (the live demo's timing options), each with its own
# --records and stdout report, both telling the one Alertmanager; their stderr printed with
# the demo's time and kept in logs/insert-correlate.log, each line after its instance's name.
instances_start() {
    local c extra=() fifo
    [ -n "$alertmanager" ] && extra=(--alertmanager "$alertmanager")
    LIVE_T[start]=$(now_ns)
    for c in "${BUS_INSTANCES[@]}"; do
        say "insert-correlate --nats BUS --instance $c --partitions ${BUS_CANDIDATES[$c]}" \
            "--on-stop decide --records correlated-$c.jsonl --congestion-bin $CONGESTION_BIN_MS" \
            "--interval $LIVE_INTERVAL_S --max-delay $LIVE_MAX_DELAY_S ${extra[*]}"
        fifo=$SOCK_DIR/stderr-$c
        mkfifo "$fifo" || die "mkfifo failed"
        correlator_lines "$c | " < "$fifo" &
        INST_LOG_PID[$c]=$!
        "$CORRELATE_BIN" --nats "$BUS_URLS" --nats-hosts "$BUS_DIR/hosts" \
            --nats-partitions "$BUS_PARTITIONS" --nats-replicas "$BUS_REPLICAS" --instance "$c" \
            --partitions "${BUS_CANDIDATES[$c]}" --on-stop decide --records "$OUT/correlated-$c.jsonl" \
            --congestion-bin "$CONGESTION_BIN_MS" --interval "$LIVE_INTERVAL_S" \
            --max-delay "$LIVE_MAX_DELAY_S" "${extra[@]}" > "$OUT/report-$c.txt" 2> "$fifo" &
        INST_PID[$c]=$!
    done
    for c in "${BUS_INSTANCES[@]}"; do
        for _ in $(seq 100); do
            grep -q "^$c | .*owned through leases" "$LOGS/insert-correlate.log" 2>/dev/null && continue 2
            kill -0 "${INST_PID[$c]}" 2>/dev/null || break
            sleep 0.1
        done
        die "insert-correlate $c did not start ($LOGS/insert-correlate.log)"
    done
    if [ -n "$alertmanager" ]; then
        python3 scripts/demo-workload.py watch-alertmanager "$alertmanager" "$LOGS/alertmanager.jsonl" "$T0" &
        WATCH_PID=$!
    fi
}

# Once the first producer has made the stream, the instances take their partitions' leases
# (they wait for the stream): each its four before the workload starts.
instances_wait_partitions() {
    local c n
    for c in "${BUS_INSTANCES[@]}"; do
        for _ in $(seq 300); do
            n=$(grep -c "^$c | .*took partition" "$LOGS/insert-correlate.log" 2>/dev/null)
            [ "${n:-0}" -ge $((BUS_PARTITIONS / ${#BUS_INSTANCES[@]})) ] && continue 2
            kill -0 "${INST_PID[$c]}" 2>/dev/null || die "insert-correlate $c exited ($LOGS/insert-correlate.log)"
            sleep 0.1
        done
        die "insert-correlate $c did not take its partitions within 30 s ($LOGS/insert-correlate.log)"
    done
    say "bus: ${BUS_INSTANCES[*]} hold their partitions' leases"
}

# After the producers stopped (their batches acknowledged by the bus): waits until the
# instances' durable consumers have delivered everything and had it acknowledged, then
# stops both at once (SIGTERM: --on-stop decide, each decides what it holds as at the end
# of the input) and the bus; the instances' records together are correlated.jsonl.
instances_stop() {
    local c consumers="" k drained
    for k in $(seq 0 $((BUS_PARTITIONS - 1))); do consumers="${consumers:+$consumers,}insert-correlate-p$k"; done
    drained=$(python3 scripts/demo-bus.py drained 60 "$consumers" "${BUS_HTTP_PORTS[@]}")
    TEE_RC=$?
    say "bus: $drained"
    LIVE_T[inputs_read]=$(now_ns)
    for c in "${BUS_INSTANCES[@]}"; do kill -TERM "${INST_PID[$c]}" 2>/dev/null; done
    for c in "${BUS_INSTANCES[@]}"; do
        wait_pid "${INST_PID[$c]}" 60
        INST_RC[$c]=$?
        [ "${INST_RC[$c]}" -eq 0 ] || CORR_RC=${INST_RC[$c]}
        wait "${INST_LOG_PID[$c]}" 2>/dev/null
    done
    INST_PID=() INST_LOG_PID=()
    LIVE_T[end]=$(now_ns)
    if [ -n "$WATCH_PID" ]; then
        kill -TERM "$WATCH_PID" 2>/dev/null
        wait_pid "$WATCH_PID" 10
        WATCH_PID=""
    fi
    bus_down
    local files=()
    for c in "${BUS_INSTANCES[@]}"; do files+=("$OUT/correlated-$c.jsonl"); done
    python3 scripts/demo-bus.py union "$OUT/correlated.jsonl" "${files[@]}" > /dev/null ||
        die "cannot write correlated.jsonl"
}

# At an early exit: what of the above still runs.
bus_cleanup() {
    local c
    for c in "${!INST_PID[@]}"; do kill -TERM "${INST_PID[$c]}" 2>/dev/null; done
    for c in "${!INST_PID[@]}"; do wait_pid "${INST_PID[$c]}" 10; done
    for c in "${!INST_LOG_PID[@]}"; do wait_pid "${INST_LOG_PID[$c]}" 5; done
    INST_PID=() INST_LOG_PID=()
    bus_down
}

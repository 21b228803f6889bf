#!/usr/bin/env bash
# scripts/setup.sh: installs every Debian package that INSERT's build, tests and demos need,
# and reserves 2 MiB hugepages for DPDK when the machine allows it. Idempotent: apt runs
# only when a package is missing; a second run changes nothing. Prints what it did.
set -euo pipefail

packages=(
    # build
    meson ninja-build pkg-config g++ clang llvm libclang-rt-14-dev clang-format
    dpdk-dev libdpdk-dev libbpf-dev bpftool libibverbs-dev rdma-core ibverbs-providers
    libtbb-dev libfmt-dev libgtest-dev libbenchmark-dev libpcap-dev nlohmann-json3-dev
    libcli11-dev zlib1g-dev libsimdjson-dev libjemalloc-dev
    # the man pages, made from each program's --help at build time
    help2man
    # insert-correlate --alertmanager: HTTP and HTTPS (the system's CAs)
    libcurl4-openssl-dev ca-certificates
    # --http of insert-dp and insert-correlate: /metrics and the live page (libmicrohttpd)
    libmicrohttpd-dev
    # --nats of insert-dp and insert-trace: NATS JetStream's C client, and the server the
    # scale-out tests start (docs/scale-out.md)
    libnats-dev nats-server
    # tests and demos
    python3 tshark tcpreplay tcpdump iproute2 perftest iputils-ping ethtool
    # the HTML report (Chart.js, inlined into the page) and its checks: a real headless
    # browser, a real Alertmanager to deliver alerts to, a real Prometheus to scrape --http
    libjs-chart.js chromium prometheus-alertmanager prometheus
)
hugepages_wanted=${INSERT_HUGEPAGES:-1024}

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null && sudo_cmd=(sudo)
fi

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "setup: all ${#packages[@]} packages already installed"
else
    echo "setup: installing ${#missing[@]} packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # tshark asks whether non-root users may capture; answer for it.
    echo "wireshark-common wireshark-common/install-setuid boolean false" |
        "${sudo_cmd[@]}" debconf-set-selections 2>/dev/null || true
    "${sudo_cmd[@]}" apt-get update -q
    "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
    echo "setup: installed ${missing[*]}"
fi

# Hugepages: DPDK runs faster with them; insert-gen's tables and insert-correlate's record
# arrays take from the pool what leaves 512 MiB free for DPDK (memory the VM has backed
# already: dataplane/common/hugetlb_pool.hpp). Every INSERT command also runs without them
# (replay uses --no-huge / in-memory), so failure here is not an error.
have=$(awk '/^HugePages_Total:/ {print $2}' /proc/meminfo 2>/dev/null || echo 0)
if [ "${have:-0}" -ge "$hugepages_wanted" ]; then
    echo "setup: ${have} hugepages already reserved"
else
    if { echo "$hugepages_wanted" | "${sudo_cmd[@]}" tee /proc/sys/vm/nr_hugepages >/dev/null; } 2>/dev/null; then
        now=$(awk '/^HugePages_Total:/ {print $2}' /proc/meminfo)
        echo "setup: reserved ${now} x 2 MiB hugepages (asked for ${hugepages_wanted})"
    else
        echo "setup: cannot reserve hugepages here (read-only /proc/sys?); carrying on without"
    fi
fi
if ! grep -qs ' hugetlbfs ' /proc/mounts; then
    if "${sudo_cmd[@]}" mkdir -p /dev/hugepages 2>/dev/null &&
        "${sudo_cmd[@]}" mount -t hugetlbfs nodev /dev/hugepages 2>/dev/null; then
        echo "setup: mounted hugetlbfs on /dev/hugepages"
    else
        echo "setup: no hugetlbfs mount (DPDK will run with --no-huge)"
    fi
fi

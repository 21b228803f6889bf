// EAL start-up for INSERT's tools: picks defaults that work on a machine without
// hugepages or NICs (offline replay, CI) and leaves every choice to the user's own EAL
// options when given. One session per process; errors are returned, never rte_exit().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace insert::pipeline {

struct EalRequest {
    unsigned lcores = 2;                 // main lcore + workers (+ any other lcore users)
    uint64_t memory_bytes = 256u << 20;  // what the tool will allocate through DPDK
    bool want_pci = false;               // replay has no ports: --no-pci unless asked for
    std::string tool = "insert-dp";      // file-prefix stem
    std::vector<std::string> user_args;  // EAL options after `--`, verbatim
};

// The argument vector handed to rte_eal_init(). Adds, unless the user set them:
// --file-prefix (unique per process), -l/--lcores (1:1 on free cores, or floating over
// all allowed cores when there are more lcores than cores), --no-huge -m when the free
// hugepages cannot hold `memory_bytes`, --in-memory, --no-pci, --no-telemetry and a quiet
// log level. Pure (reads /sys and the affinity mask only), so it is unit-tested.
struct EalPlan {
    std::vector<std::string> args;
    std::string file_prefix;
    bool hugepages = false;
    bool own_prefix = false;  // file_prefix was made here (unique), not given by the user
};
EalPlan plan_eal(const EalRequest& request);

// Free hugepage memory on the machine, all page sizes, in bytes.
uint64_t free_hugepage_bytes();
// CPUs this process may run on, in increasing order.
std::vector<unsigned> allowed_cpus();

class EalSession {
  public:
    EalSession() = default;
    ~EalSession();
    EalSession(const EalSession&) = delete;
    EalSession& operator=(const EalSession&) = delete;

    // rte_eal_init() with plan_eal(request); false and `error` (one line) on failure. What
    // EAL prints while it starts is held back: on failure the one line carries its reason
    // (EAL's usage text, 100 lines, no longer lands on stdout); on success it goes to
    // stderr. Runtime directories left by earlier runs of the tools that were killed
    // (their process is gone) are removed first.
    bool start(const EalRequest& request, std::string& error);
    // After a failed start(): the failure was a bad EAL option (exit status 2), not a
    // runtime condition such as a file prefix in use (1).
    bool bad_options() const { return bad_options_; }
    // rte_eal_cleanup() and removal of this process's runtime directory. Idempotent.
    void stop();

    const EalPlan& plan() const { return plan_; }
    bool running() const { return running_; }

  private:
    void remove_runtime_dir();
    EalPlan plan_;
    bool running_ = false;
    bool bad_options_ = false;
    bool own_prefix_ = false;  // the prefix is ours (not the user's): remove it on failure
};

}  // namespace insert::pipeline

// The BPF side of insert-trace: loads the skeleton with the filters, attaches uprobes to
// libibverbs copies (control path) and to provider functions (data path), and delivers
// ring-buffer events. One instance per tracer process; no global state.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "verbs_trace.h"

struct verbs_trace_bpf;
struct ring_buffer;
struct bpf_link;
struct bpf_program;

namespace insert::hosttrace {

struct TracerFilters {
    pid_t tgid = 0;
    uint64_t cgroup_id = 0;
    uint32_t netns_inode = 0;  // --netns: also filtered in the BPF programs
    std::string comm;
    uint32_t datapath_sample = 1;
    uint32_t ringbuf_bytes = 4u << 20;
    // Probe softverbs' trace sites (trace_sites.h) where a library exports them, instead of
    // its ops-table entries (off: measure or debug the entry-probe path).
    bool use_sites = true;
};

// Functions found through a context's ops tables rather than by symbol: the data path of
// context->ops and the control-path verbs_context.create_qp_ex (ibv_create_qp_ex is inline).
enum class DatapathFn { PostSend, PostRecv, PollCq, CreateQpEx };

struct Counters {
    uint64_t ringbuf_drops = 0;
    uint64_t read_errors = 0;
    uint64_t sampled_out = 0;
};

// Control-path functions probed in a libibverbs copy; `required` ones must resolve.
struct VerbProbeSpec {
    const char* symbol;
    bool required;
};
extern const std::vector<VerbProbeSpec> kControlVerbs;

class VerbsTracer {
  public:
    using EventHandler = std::function<void(const insert_trace_event&)>;
    using Clock = std::chrono::steady_clock;

    static std::unique_ptr<VerbsTracer> open(const TracerFilters& filters, EventHandler handler,
                                             std::string& error);
    ~VerbsTracer();
    VerbsTracer(const VerbsTracer&) = delete;
    VerbsTracer& operator=(const VerbsTracer&) = delete;

    // Probes the control-path verbs of a libibverbs file for `pid` (-1: every process).
    // Appends the attached symbols and their file offsets to `attached`. Returns false with `error`
    // when the file is not a libibverbs (a required symbol is missing) or an attach fails.
    // Attaching the same file (device, inode) twice is a no-op that returns true.
    // When the file exports softverbs' trace sites and the data path is traced, they are
    // probed too and listed in `sites`.
    bool attach_library(const std::string& path, pid_t pid,
                        std::vector<std::pair<std::string, uint64_t>>& attached,
                        std::vector<std::pair<std::string, uint64_t>>& sites, bool& already,
                        std::string& error);

    // Probes a provider function at (file, offset); idempotent per location.
    // `already` tells whether it was probed before; `by_site` that nothing was attached
    // because the file's trace sites report this function's work (post/poll of softverbs).
    bool attach_datapath(DatapathFn fn, const std::string& path, uint64_t offset, pid_t pid,
                         bool& already, bool& by_site, std::string& error);

    // Waits up to `timeout_ms` for events and hands them to the handler, reading until the
    // ring is empty or `until` has passed (producers that outrun the reader would otherwise
    // keep it reading forever). Returns the number of ring records read, or a negative errno
    // (-EINTR when a signal interrupted the wait).
    int poll(int timeout_ms, Clock::time_point until);
    // Reads what the ring holds, until it is empty or `until` has passed. Returns the number
    // of records read, or a negative errno; `cut` says whether the deadline ended it.
    int drain(Clock::time_point until, bool& cut);
    int drain(Clock::time_point until) {
        bool cut = false;
        return drain(until, cut);
    }

    // Removes every probe (the destructor does it too). Probes are released together: each
    // release waits for RCU grace periods, which concurrent releases share.
    void detach();

    Counters counters() const;
    size_t links() const { return probes_.size(); }
    // How probes are attached: "uprobe_multi" (BPF links of their own, kernel >= 6.6) or
    // "perf_event" (a perf event per probe, released one at a time under a kernel-wide lock).
    const char* link_kind() const { return multi_ ? "uprobe_multi" : "perf_event"; }

  private:
    // One attached probe: a libbpf link (perf event) or the fd of a uprobe_multi link.
    struct Probe {
        ::bpf_link* link = nullptr;
        int fd = -1;
    };

    VerbsTracer() = default;
    static int on_sample(void* self, void* data, size_t size);
    int read_ring(int timeout_ms, Clock::time_point until, bool& cut);
    static void release(Probe& p);
    void release_from(size_t first);
    void expand_batch(const insert_trace_batch& b, size_t size);
    void expand_flush(const insert_trace_batch& b, size_t size);
    bool attach_one(::bpf_program* prog, bool retprobe, pid_t pid, const std::string& path,
                    uint64_t offset, std::string& error);

    verbs_trace_bpf* skel_ = nullptr;
    ring_buffer* rb_ = nullptr;
    EventHandler handler_;
    std::vector<Probe> probes_;
    bool multi_ = false;
    // Reading stops at the first record handled after this (on_sample's deadline).
    Clock::time_point read_until_ = Clock::time_point::max();
    uint64_t records_read_ = 0;
    std::set<std::pair<uint64_t, uint64_t>> libraries_;                 // (dev, inode)
    std::set<std::tuple<uint64_t, uint64_t, uint64_t, int>> datapath_;  // dev, inode, offset, fn
    std::set<std::pair<uint64_t, uint64_t>> site_libraries_;            // (dev, inode)
    bool use_sites_ = true;
    bool datapath_on_ = true;
};

// Candidates for the system's libibverbs, in the order the dynamic loader would find them.
std::string system_libibverbs();

}  // namespace insert::hosttrace

// insert-trace: records which process owns which QP and MR and what work it posts, by
// eBPF uprobes on libibverbs (docs/insert-trace.md).
#include <csignal>
#include <cstdio>

#include <atomic>

#include "hosttrace/trace_options.hpp"
#include "hosttrace/trace_session.hpp"

namespace {

std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free);

void on_signal(int) {
    g_stop.store(true, std::memory_order_relaxed);
}

}  // namespace

int main(int argc, char** argv) {
    insert::hosttrace::TraceOptions options;
    std::string error;
    const int parsed = insert::hosttrace::parse_trace_options(argc, argv, options, error);
    if (parsed == 2) {
        std::fprintf(stderr, "insert-trace: %s\n", error.c_str());
        return 2;
    }
    if (parsed == 0) return 0;
    struct sigaction sa {};
    sa.sa_handler = on_signal;  // no SA_RESTART: the ring-buffer wait returns EINTR
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    std::signal(SIGPIPE, SIG_IGN);
    return insert::hosttrace::run_trace_session(options, g_stop);
}

// The trace site, the registry of per-thread rings and the flusher thread (trace_buffer.hpp).
#include "hosttrace/softverbs/trace_buffer.hpp"

#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>

// The site: exported under version SOFTVERBS_TRACE_2 so a tracer finds it in .dynsym, with
// a hidden alias at the same address that the library calls - a direct call, not through
// the PLT. The body is the 5-byte NOP (which the kernel turns into a call to its uprobe
// trampoline instead of trapping on a breakpoint) and a return.
// clang-format off
asm(".pushsection .text\n"
    ".p2align 4\n"
    ".globl softverbs_trace_flush\n"
    ".type softverbs_trace_flush, @function\n"
    ".globl softverbs_trace_flush_local\n"
    ".hidden softverbs_trace_flush_local\n"
    ".type softverbs_trace_flush_local, @function\n"
    "softverbs_trace_flush:\n"
    "softverbs_trace_flush_local:\n"
    ".byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"
    "ret\n"
    ".size softverbs_trace_flush, .-softverbs_trace_flush\n"
    ".size softverbs_trace_flush_local, .-softverbs_trace_flush_local\n"
    ".popsection\n");
// clang-format on

static_assert(sizeof(sv_trace_rec) == SV_TRACE_REC_SIZE);
static_assert(offsetof(sv_trace_rec, u) == 40);

namespace insert::softverbs {

namespace {

void site_sink(const sv_trace_rec* recs, uint32_t n, const TraceRing& ring) {
    softverbs_trace_flush_local(recs, n, ring.tid(), ring.comm());
}

// Every ring of the process. Allocated once and never freed: the detached flusher thread
// and the atexit handler may run while static objects are being destroyed.
struct Registry {
    std::mutex mutex;
    TraceRing* rings = nullptr;
    bool flusher_started = false;
};

Registry& registry() {
    static Registry* r = new Registry();
    return *r;
}

thread_local TraceRing* t_ring = nullptr;

// At thread exit: report what waits, then forget the ring. (The main thread's runs at
// exit(), before the atexit handler.)
struct RingReaper {
    bool armed = false;
    ~RingReaper() {
        TraceRing* ring = t_ring;
        if (!armed || !ring) return;
        ring->flush(site_sink, TraceRing::kWaitBounded);
        Registry& reg = registry();
        {
            std::lock_guard guard(reg.mutex);
            for (TraceRing** p = &reg.rings; *p; p = &(*p)->next)
                if (*p == ring) {
                    *p = ring->next;
                    break;
                }
        }
        t_ring = nullptr;
        delete ring;
    }
};

thread_local RingReaper t_reaper;

void flush_every_ring(uint32_t patience, uint64_t older_than_ns) {
    Registry& reg = registry();
    std::lock_guard guard(reg.mutex);
    for (TraceRing* r = reg.rings; r; r = r->next) r->flush(site_sink, patience, older_than_ns);
}

[[noreturn]] void flusher_main() {
    // Its own name shows what it is in ps/top; the records it reports carry their owners'
    // tid and name (trace_sites.h), never this thread's.
    pthread_setname_np(pthread_self(), "sv-trace-flush");
    constexpr auto kTick = std::chrono::milliseconds(kFlushTickMs);
    constexpr uint64_t kTickNs = static_cast<uint64_t>(kFlushTickMs) * 1'000'000;
    for (;;) {
        std::this_thread::sleep_for(kTick);
        const uint64_t now = trace_now_ns();
        // A ring whose owner is flushing is skipped (wait = false): its owner reports it.
        if (now > kTickNs) flush_every_ring(TraceRing::kNoWait, now - kTickNs);
    }
}

// exit() may run in a signal handler that interrupted this very thread inside
// trace_flush_all() (registry held) or a flush (a ring busy): every wait here is bounded,
// and what cannot be had in time is left unreported rather than hanging the exit.
void at_exit() {
    Registry& reg = registry();
    for (uint32_t waited = 0; !reg.mutex.try_lock(); waited++) {
        if (waited >= TraceRing::kWaitBounded) return;
        std::this_thread::yield();
    }
    for (TraceRing* r = reg.rings; r; r = r->next) r->flush(site_sink, TraceRing::kWaitBounded);
    reg.mutex.unlock();
}

// fork(): the child keeps the forking thread only. Its ring's records are the parent's to
// report; the other threads' rings are dropped (their memory stays with the dead threads'
// TLS, never touched again); the flusher does not exist in the child.
void before_fork() {
    registry().mutex.lock();
}

void after_fork_parent() {
    registry().mutex.unlock();
}

void after_fork_child() {
    Registry& reg = registry();
    reg.rings = nullptr;
    reg.flusher_started = false;
    if (TraceRing* ring = t_ring) {
        ring->forget_pending(static_cast<uint32_t>(gettid()));
        ring->next = nullptr;
        reg.rings = ring;
    }
    reg.mutex.unlock();
}

}  // namespace

TraceRing* trace_ring() {
    if (TraceRing* r = t_ring) [[likely]]
        return r;
    char comm[16] = {};
    prctl(PR_GET_NAME, comm, 0, 0, 0);
    // Once per thread, never per record; no exception may cross the C entry points.
    auto* ring = new (std::nothrow) TraceRing(static_cast<uint32_t>(gettid()), comm);
    if (!ring) return nullptr;
    Registry& reg = registry();
    bool start = false;
    {
        std::lock_guard guard(reg.mutex);
        ring->next = reg.rings;
        reg.rings = ring;
        start = !reg.flusher_started;
        reg.flusher_started = true;
    }
    t_ring = ring;
    t_reaper.armed = true;  // first use of the thread_local: registers its destructor
    if (start) {
        static std::once_flag once;
        std::call_once(once, [] {
            std::atexit(at_exit);
            pthread_atfork(before_fork, after_fork_parent, after_fork_child);
        });
        // Detached: it never ends, and the library is never unloaded (-z nodelete). Without
        // it (no thread could be made), records still go at 16 per thread and at exit.
        // All signals blocked in it (inherited from here, restored after): a process signal
        // is then never handled on the flusher, which may hold the registry and a ring.
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        try {
            std::thread(flusher_main).detach();
        } catch (const std::system_error&) {
        }
        pthread_sigmask(SIG_SETMASK, &old, nullptr);
    }
    return ring;
}

void trace_flush_full(TraceRing& ring) {
    ring.flush(site_sink, TraceRing::kWaitForever);
}

void trace_flush_owner(TraceRing& ring) {
    ring.flush(site_sink, TraceRing::kNoWait);
}

void trace_flush_all() {
    flush_every_ring(TraceRing::kNoWait, 0);
}

}  // namespace insert::softverbs

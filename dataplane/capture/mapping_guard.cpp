#include "dataplane/capture/mapping_guard.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <mutex>

namespace insert::capture {

namespace {

constexpr int kSlots = 8;

// Read by the signal handler: lock-free atomics only. A slot is claimed by setting `base`
// last (after size and flag), and released by clearing `base` first.
struct Slot {
    std::atomic<uintptr_t> base{0};
    std::atomic<std::size_t> size{0};
    std::atomic<std::atomic<bool>*> flag{nullptr};
};
Slot g_slots[kSlots];
struct sigaction g_previous;
std::once_flag g_installed;

void on_sigbus(int sig, siginfo_t* info, void* context) {
    const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
    for (Slot& s : g_slots) {
        const uintptr_t base = s.base.load(std::memory_order_acquire);
        if (base == 0 || addr < base || addr - base >= s.size.load(std::memory_order_relaxed))
            continue;
        // Zero pages over the page that is gone: the faulting read is retried and reads
        // zeros, and the reader sees the flag before it trusts another frame.
        const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
        void* at = reinterpret_cast<void*>(addr & ~(page - 1));
        if (mmap(at, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
            break;
        if (std::atomic<bool>* flag = s.flag.load(std::memory_order_relaxed))
            flag->store(true, std::memory_order_release);
        return;
    }
    // Not a guarded mapping: what would have happened without us.
    if (g_previous.sa_flags & SA_SIGINFO) {
        if (g_previous.sa_sigaction) g_previous.sa_sigaction(sig, info, context);
        return;
    }
    if (g_previous.sa_handler == SIG_IGN) return;
    if (g_previous.sa_handler != SIG_DFL) {
        g_previous.sa_handler(sig);
        return;
    }
    signal(SIGBUS, SIG_DFL);  // the faulting access is retried and kills the process
}

void install() {
    struct sigaction sa {};
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &g_previous);
}

}  // namespace

bool guard_mapping(const void* base, std::size_t size, std::atomic<bool>* shrunk) {
    std::call_once(g_installed, install);
    for (Slot& s : g_slots) {
        uintptr_t expected = 0;
        // Claim with a sentinel, fill, then publish the real base.
        if (!s.base.compare_exchange_strong(expected, 1)) continue;
        s.size.store(size, std::memory_order_relaxed);
        s.flag.store(shrunk, std::memory_order_relaxed);
        s.base.store(reinterpret_cast<uintptr_t>(base), std::memory_order_release);
        return true;
    }
    return false;
}

void unguard_mapping(const void* base) {
    for (Slot& s : g_slots)
        if (s.base.load(std::memory_order_acquire) == reinterpret_cast<uintptr_t>(base)) {
            s.base.store(0, std::memory_order_release);
            return;
        }
}

}  // namespace insert::capture

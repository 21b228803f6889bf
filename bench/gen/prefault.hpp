// Fresh memory faulted in by another core while this one fills it.
//
// The set-up before the pipeline starts runs on one thread, with the other core idle, and
// on `large` much of it was the kernel zeroing the 35 MB message table as it was first
// written (30-100 ms in a virtual machine, depending on whether the host still backs the
// pages).
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <thread>

namespace insert::gen {

// Faults in the pages of [p, p + bytes) on a thread of its own, 2 MiB at a time in address
// order, and joins it when destroyed. MADV_POPULATE_WRITE maps each page as a write would,
// without writing: the owner may fill the range meanwhile (a page it reaches first, it
// faults in itself). Ranges under kMinBytes, and kernels without it (before 5.14), are left
// alone.
class BackgroundFault {
  public:
    static constexpr std::size_t kMinBytes = std::size_t{8} << 20;

    BackgroundFault(const void* p, std::size_t bytes) {
        if (bytes < kMinBytes) return;
        constexpr uintptr_t kPage = 4096, kStep = uintptr_t{2} << 20;
        const uintptr_t begin = reinterpret_cast<uintptr_t>(p) & ~(kPage - 1);
        const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes + kPage - 1) & ~(kPage - 1);
        thread_ = std::jthread([begin, end] {
            for (uintptr_t at = begin; at < end; at += kStep) {
                const uintptr_t n = end - at < kStep ? end - at : kStep;
                if (::madvise(reinterpret_cast<void*>(at), n, MADV_POPULATE_WRITE) != 0) break;
            }
        });
    }

  private:
    std::jthread thread_;
};

}  // namespace insert::gen

#include "dataplane/common/nats_library.hpp"

#ifdef INSERT_HAVE_NATS
#include <nats/nats.h>
#endif

#include <mutex>
#include <utility>
#include <vector>

namespace insert::nats_library {

namespace {

std::mutex mutex;
int holders = 0;
std::vector<std::function<void()>> waiting;  // freed when the library is closed

}  // namespace

void hold() {
    std::lock_guard lk(mutex);
    ++holders;
}

void release(std::function<void()> free_after) {
    std::vector<std::function<void()>> now;
    {
        std::lock_guard lk(mutex);
        if (free_after) waiting.push_back(std::move(free_after));
        if (--holders > 0) return;
        holders = 0;
#ifdef INSERT_HAVE_NATS
        nats_CloseAndWait(2000);
#endif
        now.swap(waiting);
    }
    for (auto& f : now) f();
}

}  // namespace insert::nats_library

#include "dataplane/live/qp_board.hpp"

#include <algorithm>

namespace insert::live {

void QpBoard::offer(const state::QpRecord& qp) noexcept {
    // Same endpoint: update in place; else replace the smallest if this one is larger.
    std::size_t slot = kTop;
    std::size_t smallest = 0;
    for (std::size_t i = 0; i < kTop; ++i) {
        const Entry& e = entries_[i];
        if (e.used && e.qp.qpn == qp.qpn && e.qp.ip == qp.ip) {
            slot = i;
            break;
        }
        if (!e.used || (entries_[smallest].used && e.qp.bytes < entries_[smallest].qp.bytes))
            smallest = i;
    }
    if (slot == kTop) {
        if (entries_[smallest].used && entries_[smallest].qp.bytes >= qp.bytes) return;
        slot = smallest;
    }
    const uint64_t s = seq_.load(std::memory_order_relaxed);
    seq_.store(s + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    entries_[slot].qp = qp;
    entries_[slot].used = true;
    std::atomic_thread_fence(std::memory_order_release);
    seq_.store(s + 2, std::memory_order_release);
}

std::vector<state::QpRecord> QpBoard::snapshot() const {
    std::array<Entry, kTop> copy;
    for (;;) {
        const uint64_t s0 = seq_.load(std::memory_order_acquire);
        if (s0 & 1) continue;
        copy = entries_;
        std::atomic_thread_fence(std::memory_order_acquire);
        if (seq_.load(std::memory_order_relaxed) == s0) break;
    }
    std::vector<state::QpRecord> out;
    for (const Entry& e : copy)
        if (e.used) out.push_back(e.qp);
    return out;
}

QpBoards::QpBoards(unsigned workers) {
    for (unsigned i = 0; i < workers; ++i) sinks_.push_back(std::make_unique<BoardSink>());
}

std::function<std::unique_ptr<state::Engine>(const state::EngineConfig&, state::RecordSink&,
                                             std::string&)>
QpBoards::factory() {
    return [this, next = 0u](const state::EngineConfig& config, state::RecordSink& sink,
                             std::string& error) mutable -> std::unique_ptr<state::Engine> {
        if (next >= sinks_.size()) {
            error = "more engines than boards";
            return nullptr;
        }
        BoardSink& b = *sinks_[next++];
        b.inner = &sink;
        return state::Engine::create(config, b, error);
    };
}

std::vector<state::QpRecord> QpBoards::top(std::size_t k) const {
    std::vector<state::QpRecord> all;
    for (const auto& s : sinks_) {
        auto part = s->board.snapshot();
        all.insert(all.end(), part.begin(), part.end());
    }
    std::sort(all.begin(), all.end(),
              [](const state::QpRecord& a, const state::QpRecord& b) { return a.bytes > b.bytes; });
    if (all.size() > k) all.resize(k);
    return all;
}

}  // namespace insert::live

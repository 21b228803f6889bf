#include "dataplane/export/latency_book.hpp"

namespace insert::exporter {

std::size_t LatencyBook::probe(const EndpointKey& endpoint) const {
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = EndpointKeyHash{}(endpoint)&mask;; i = (i + 1) & mask) {
        const Slot& s = slots_[i];
        if (s.index == kEmpty || s.key == endpoint) return i;
    }
}

void LatencyBook::grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    for (const Slot& s : old)
        if (s.index != kEmpty) slots_[probe(s.key)] = s;
}

void LatencyBook::add(const EndpointKey& endpoint, uint64_t latency_ns) {
    std::size_t i = probe(endpoint);
    if (slots_[i].index == kEmpty) {
        if ((count_ + 1) * 2 > slots_.size()) {
            grow();
            i = probe(endpoint);
        }
        slots_[i].key = endpoint;
        if ((count_ >> kChunkBits) == chunks_.size())
            chunks_.push_back(std::make_unique<LatencyHistogram[]>(std::size_t{1} << kChunkBits));
        slots_[i].index = count_++;
    }
    histogram(slots_[i].index).add(latency_ns);
}

const LatencyHistogram* LatencyBook::find(const EndpointKey& endpoint) const {
    const Slot& s = slots_[probe(endpoint)];
    return s.index == kEmpty ? nullptr : &histogram(s.index);
}

}  // namespace insert::exporter

#include "dataplane/export/endpoint_book.hpp"

namespace insert::exporter {

std::size_t EndpointBook::probe(const EndpointKey& endpoint) const {
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = EndpointKeyHash{}(endpoint)&mask;; i = (i + 1) & mask) {
        const Slot& s = slots_[i];
        if (s.index == kEmpty || s.key == endpoint) return i;
    }
}

void EndpointBook::grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    for (const Slot& s : old)
        if (s.index != kEmpty) slots_[probe(s.key)] = s;
}

EndpointBook::Entry& EndpointBook::entry(const EndpointKey& endpoint) {
    std::size_t i = probe(endpoint);
    if (slots_[i].index == kEmpty) {
        if ((entries_.size() + 1) * 2 > slots_.size()) {
            grow();
            i = probe(endpoint);
        }
        slots_[i].key = endpoint;
        slots_[i].index = entries_.size();
        entries_.emplace_back();
    }
    return entries_[slots_[i].index];
}

const EndpointBook::Entry* EndpointBook::find(const EndpointKey& endpoint) const {
    const Slot& s = slots_[probe(endpoint)];
    return s.index == kEmpty ? nullptr : &entries_[s.index];
}

}  // namespace insert::exporter

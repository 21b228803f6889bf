#include "dataplane/export/endpoint_book.hpp"

#include "dataplane/common/linear_probing.hpp"

namespace insert::exporter {

std::size_t EndpointBook::probe(const EndpointKey& endpoint) const {
    const Slot* s =
        common::probe(slots_.data(), slots_.size() - 1, EndpointKeyHash{}(endpoint), used,
                      [&endpoint](const Slot& slot) { return slot.key == endpoint; })
            .slot;
    return static_cast<std::size_t>(s - slots_.data());
}

void EndpointBook::grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    for (const Slot& s : old)
        if (s.used) slots_[probe(s.key)] = s;
}

std::size_t EndpointBook::slot_for(const EndpointKey& endpoint) {
    std::size_t i = probe(endpoint);
    if (slots_[i].used) return i;
    if ((used_ + 1) * 2 > slots_.size()) {
        grow();
        i = probe(endpoint);
    }
    slots_[i] = Slot{endpoint, kNone, kNoFinal, true};
    ++used_;
    return i;
}

void EndpointBook::erase_slot(std::size_t i) {
    common::erase_at(
        slots_.data(), slots_.size() - 1, i, used,
        [](const Slot& s) { return EndpointKeyHash{}(s.key); }, [](Slot& s) { s = Slot{}; });
    --used_;
}

uint32_t EndpointBook::new_entry() {
    if (!free_.empty()) {
        const uint32_t i = free_.back();
        free_.pop_back();
        return i;
    }
    const uint32_t i = entries_.size();
    entries_.emplace_back();
    return i;
}

EndpointBook::Entry& EndpointBook::part(const EndpointKey& endpoint, const proto::IpAddress& src) {
    Slot& s = slots_[slot_for(endpoint)];
    uint32_t* link = &s.first;
    for (; *link != kNone; link = &entries_[*link].next)
        if (entries_[*link].src == src) return entries_[*link];
    const uint32_t i = new_entry();
    Entry& e = entries_[i];
    e.src = src;
    e.next = kNone;
    *link = i;
    return e;
}

const EndpointBook::Entry* EndpointBook::find_part(const EndpointKey& endpoint,
                                                   const proto::IpAddress& src) const {
    for (uint32_t i = first_part(endpoint); i != kNone; i = entries_[i].next)
        if (entries_[i].src == src) return &entries_[i];
    return nullptr;
}

uint32_t EndpointBook::first_part(const EndpointKey& endpoint) const {
    const Slot& s = slots_[probe(endpoint)];
    return s.used ? s.first : kNone;
}

void EndpointBook::erase_part(const EndpointKey& endpoint, const proto::IpAddress& src) {
    const std::size_t at = probe(endpoint);
    Slot& s = slots_[at];
    if (!s.used) return;
    for (uint32_t* link = &s.first; *link != kNone; link = &entries_[*link].next) {
        const uint32_t i = *link;
        if (entries_[i].src != src) continue;
        *link = entries_[i].next;
        entries_[i] = Entry{};  // frees the histogram's heap parts now
        free_.push_back(i);
        break;
    }
    if (s.first == kNone && s.final_record == kNoFinal) erase_slot(at);
}

uint32_t& EndpointBook::final_record(const EndpointKey& endpoint) {
    return slots_[slot_for(endpoint)].final_record;
}

uint32_t EndpointBook::final_record_of(const EndpointKey& endpoint) const {
    const Slot& s = slots_[probe(endpoint)];
    return s.used ? s.final_record : kNoFinal;
}

}  // namespace insert::exporter

#include "correlator/input/host_names.hpp"

#include <bit>

namespace insert::correlate {

HostNames::~HostNames() {
    for (auto& chunk : chunks_) delete[] chunk.load(std::memory_order_relaxed);
}

unsigned HostNames::chunk_of(uint32_t id) {
    return static_cast<unsigned>(std::bit_width(id / kFirstChunk + 1)) - 1;
}

uint32_t HostNames::intern(std::string_view name) {
    std::lock_guard lock(mutex_);
    const auto [it, inserted] =
        ids_.try_emplace(std::string(name), static_cast<uint32_t>(names_.size()));
    if (!inserted) return it->second;
    const uint32_t id = it->second;
    names_.emplace_back(name);
    const unsigned k = chunk_of(id);
    std::string_view* chunk = chunks_[k].load(std::memory_order_relaxed);
    if (!chunk) {
        chunk = new std::string_view[std::size_t{kFirstChunk} << k];
        chunks_[k].store(chunk, std::memory_order_release);
    }
    chunk[id - chunk_base(k)] = names_.back();
    size_.store(id + 1, std::memory_order_release);
    return id;
}

std::string_view HostNames::view(uint32_t id) const {
    if (id >= size()) return {};
    const unsigned k = chunk_of(id);
    return chunks_[k].load(std::memory_order_acquire)[id - chunk_base(k)];
}

}  // namespace insert::correlate

// The stream sequences a bus run has handled on one partition (bus_inputs.hpp), kept as
// ranges. A JetStream consumer delivers in the stream's order, except what it delivers
// again: a message whose acknowledgement was lost (handled here already: skipped), or one
// that a run before this one fetched and never acknowledged (new here: taken), which comes
// after newer ones once its acknowledgement wait is over. Handling in order grows one
// range; each gap a previous run left is one more, until its messages come.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>

namespace insert::correlate {

class SeqRanges {
  public:
    bool contains(uint64_t seq) const {
        auto it = ranges_.upper_bound(seq);
        if (it == ranges_.begin()) return false;
        return seq <= std::prev(it)->second;
    }

    // `seq` handled (not yet contained).
    void add(uint64_t seq) {
        auto next = ranges_.upper_bound(seq);
        const bool joins_prev = next != ranges_.begin() && std::prev(next)->second + 1 == seq;
        const bool joins_next = next != ranges_.end() && next->first == seq + 1;
        if (joins_prev && joins_next) {
            std::prev(next)->second = next->second;
            ranges_.erase(next);
        } else if (joins_prev) {
            std::prev(next)->second = seq;
        } else if (joins_next) {
            const uint64_t last = next->second;
            ranges_.erase(next);
            ranges_.emplace(seq, last);
        } else {
            ranges_.emplace(seq, seq);
        }
    }

    std::size_t ranges() const { return ranges_.size(); }

  private:
    std::map<uint64_t, uint64_t> ranges_;  // first -> last
};

}  // namespace insert::correlate

// Joins the event windows (docs/semantics.md "Events") that several workers counted for one
// destination endpoint, kind and second: sharding puts each source's packets on the worker
// of its host pair, so a QP sprayed from many sources has a window on every worker. Each
// worker pushes its windows once its time has passed them, then a WindowMark; a window is
// written once every worker's mark has passed it, merged (state/event_window.hpp), so that
// the records are the same for any worker count (SPEC invariant 1). With one worker its
// windows go out as they come. Runs on the exporter thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>
#include <vector>

#include "dataplane/state/endpoint_key.hpp"
#include "dataplane/state/records.hpp"

namespace insert::exporter {

class EventMerger {
  public:
    using Emit = std::function<void(const state::Record&)>;

    // The number of workers whose records come in (RecordWriter::write's `source`).
    void set_sources(unsigned sources);

    // A windowed event record or a mark from worker `source`: `emit` gets every window that
    // is complete now.
    void take(const state::Record& record, unsigned source, const Emit& emit);
    // End of input: every window still held, complete or not (a mark a full ring refused).
    void finish(const Emit& emit);

    std::size_t held() const { return index_.size(); }

  private:
    struct Key {
        state::EndpointKey endpoint;
        state::EventKind kind;
        uint32_t window;
        friend bool operator==(const Key&, const Key&) = default;
    };
    struct KeyHash {
        std::size_t operator()(const Key& k) const noexcept;
    };
    // Held windows by window (timeouts apart: their workers pass them at their ticks), in
    // arrival order within a window.
    using ByWindow = std::map<uint32_t, std::vector<state::Record>>;

    void release(ByWindow& held, uint32_t before, const Emit& emit);
    uint32_t passed(bool timeouts) const;

    unsigned sources_ = 1;
    std::vector<state::WindowMark> marks_;  // each worker's latest
    ByWindow events_, timeouts_;
    std::unordered_map<Key, std::size_t, KeyHash> index_;  // into its window's vector
};

}  // namespace insert::exporter

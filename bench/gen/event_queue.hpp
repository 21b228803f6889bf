// The simulator's event queue: events come out in (time, order of scheduling) - exactly the
// order of a binary heap on (t, sequence number), which is what makes a run reproducible -
// but in O(1) per event for the next 16 ms.
//
// `large` runs ~3 events per packet, most of them within microseconds of the present
// (serialization, propagation, ACK coalescing), while each of its 50k connections also keeps
// a post ~0.6 ms and a timer 10 ms ahead; one heap over all of them (~100k entries) cost a
// cache miss per level on every push and pop. Here time is cut into windows of 2^12 ns:
// - the present window is a wheel of one FIFO per nanosecond (plus a bitmap to find the
//   next non-empty one);
// - each of the next 4095 windows is one FIFO of its events, in scheduling order;
// - events further ahead wait in a heap on (t, seq).
// When the present window is used up, the next non-empty window's FIFO is spread over the
// wheel, and heap events that came within the 4096 windows join their window's FIFO.
// Events are shown to a hook a little before they come out (kLeadNs of simulated time,
// a few dozen events): the simulator prefetches the state they will touch - on 100k QPs
// nearly every first touch is otherwise a cache miss. (Showing them when their window
// became the present one was too early: a window holds thousands of events, and by the
// time most came out their lines had been evicted again.)
//
// Why FIFOs give the heap's order: a window's FIFO receives heap events (in heap order)
// at the moment it comes within range, before anything else can be scheduled into it, and
// direct schedules after that, each with a later sequence number than everything before.
// Spreading it over the wheel keeps that order per nanosecond, and happens before
// anything is scheduled into the present window. So every FIFO is in sequence order.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <queue>
#include <vector>

#include "bench/gen/huge_vector.hpp"

namespace insert::gen {

template <typename Payload>
class EventQueue {
  public:
    EventQueue()
        : head_(kSlots, kNil), tail_(kSlots, kNil), bits_(kSlots / 64, 0), coarse_(kWindows) {}

    // `t` must not be earlier than the time of the last pop.
    void push(uint64_t t, const Payload& p) {
        const uint64_t w = t / kSlots;
        if (w == window_)
            append_fine(alloc(t, p));
        else if (w - window_ < kWindows)
            outbox_.push_back(Entry{t, p});  // to its window's FIFO at the next advance()
        else
            far_.push(Far{t, seq_++, p});
    }

    // The earliest event (ties: the first scheduled); false when none is left.
    // `upcoming(payload)` is called for events about to come out (a hint: events scheduled
    // less than kLeadNs ahead of the present may come out unannounced).
    template <typename Hook>
    bool pop(uint64_t& t, Payload& p, Hook&& upcoming) {
        if (near_ == 0 && !advance()) return false;
        // The first non-empty slot at or after the cursor (there is one: near_ > 0).
        std::size_t word_index = cursor_ / 64;
        uint64_t word = bits_[word_index] & (~uint64_t{0} << (cursor_ % 64));
        while (word == 0) word = bits_[++word_index];
        cursor_ =
            static_cast<uint32_t>(word_index * 64 + static_cast<unsigned>(std::countr_zero(word)));
        announce(upcoming);
        const uint32_t n = head_[cursor_];
        const Node& node = nodes_[n];
        head_[cursor_] = node.next;
        if (node.next == kNil) {
            tail_[cursor_] = kNil;
            bits_[word_index] &= ~(uint64_t{1} << (cursor_ % 64));
        }
        --near_;
        t = node.t;
        p = node.p;
        free_.push_back(n);
        return true;
    }

    bool pop(uint64_t& t, Payload& p) {
        return pop(t, p, [](const Payload&) {});
    }

    // ~50 events on `large` (measured: 32-64 ns best; 256 as slow as announcing windows).
    static constexpr uint32_t kLeadNs = 64;

  private:
    static constexpr uint64_t kSlots = uint64_t{1} << 12;  // ns per window
    static constexpr uint64_t kWindows = 4096;             // windows with a FIFO
    static constexpr uint32_t kNil = 0xFFFFFFFF;

    struct Node {
        uint64_t t;
        Payload p;
        uint32_t next;
    };
    struct Entry {
        uint64_t t;
        Payload p;
    };
    struct Far {
        uint64_t t;
        uint64_t seq;
        Payload p;
        bool operator>(const Far& o) const { return t != o.t ? t > o.t : seq > o.seq; }
    };

    uint32_t alloc(uint64_t t, const Payload& p) {
        if (!free_.empty()) {
            const uint32_t n = free_.back();
            free_.pop_back();
            nodes_[n] = Node{t, p, kNil};
            return n;
        }
        nodes_.push_back(Node{t, p, kNil});
        return static_cast<uint32_t>(nodes_.size() - 1);
    }

    void append_fine(uint32_t n) {
        nodes_[n].next = kNil;
        const auto slot = static_cast<uint32_t>(nodes_[n].t % kSlots);
        if (tail_[slot] == kNil) {
            head_[slot] = n;
            bits_[slot / 64] |= uint64_t{1} << (slot % 64);
        } else {
            nodes_[tail_[slot]].next = n;
        }
        tail_[slot] = n;
        ++near_;
    }

    // A window's FIFO is an array, not a list of nodes: it is walked when the window comes
    // up, milliseconds after its events were scheduled, and a list then cost a cache miss
    // per event, one after the other; an array streams (and keeps its capacity for reuse).
    void append_coarse(uint64_t w, uint64_t t, const Payload& p) {
        coarse_[w % kWindows].push_back(Entry{t, p});
        ++coarse_count_;
    }

    // Shows the hook the events of the slots up to kLeadNs past the cursor that it has not
    // been shown yet (each slot once, as `lead_` passes it).
    template <typename Hook>
    void announce(Hook& upcoming) {
        const uint32_t horizon = std::min<uint32_t>(cursor_ + kLeadNs, kSlots - 1);
        lead_ = std::max(lead_, cursor_);
        while (lead_ <= horizon) {
            std::size_t word_index = lead_ / 64;
            uint64_t word = bits_[word_index] & (~uint64_t{0} << (lead_ % 64));
            while (word == 0 && (word_index + 1) * 64 <= horizon) word = bits_[++word_index];
            const auto slot = static_cast<uint32_t>(word_index * 64 +
                                                    static_cast<unsigned>(std::countr_zero(word)));
            if (word == 0 || slot > horizon) {
                lead_ = horizon + 1;
                return;
            }
            for (uint32_t n = head_[slot]; n != kNil; n = nodes_[n].next) upcoming(nodes_[n].p);
            lead_ = slot + 1;
        }
    }

    // Events scheduled during the present window for the next ones, onto their windows'
    // FIFOs, in scheduling order. Appending each at once cost a cache miss per event (the
    // end of a FIFO that will come up in hundreds of microseconds is cold, and posts and
    // timers go to a different one each); batched, the ends are prefetched a few events
    // ahead and the misses overlap. Done before anything else in advance(), the FIFOs keep
    // their scheduling order: their entries from earlier windows (heap events included)
    // come before these, and heap events join only windows no outbox entry can be for.
    void flush_outbox() {
        constexpr std::size_t kAhead = 8;
        const std::size_t n = outbox_.size();
        auto fifo = [this](const Entry& e) -> std::vector<Entry>& {
            return coarse_[(e.t / kSlots) % kWindows];
        };
        for (std::size_t i = 0; i < n; ++i) {
            if (i + 2 * kAhead < n) __builtin_prefetch(&fifo(outbox_[i + 2 * kAhead]));
            if (i + kAhead < n) {
                const std::vector<Entry>& v = fifo(outbox_[i + kAhead]);
                __builtin_prefetch(v.data() + v.size(), 1);
            }
            fifo(outbox_[i]).push_back(outbox_[i]);
        }
        coarse_count_ += n;
        outbox_.clear();
    }

    // The present window is empty: make the next window with events the present one.
    bool advance() {
        flush_outbox();
        uint64_t w = window_ + 1;
        if (coarse_count_ > 0) {
            while (coarse_[w % kWindows].empty()) ++w;
        } else if (!far_.empty()) {
            w = far_.top().t / kSlots;  // nothing in the FIFOs: jump
        } else {
            return false;
        }
        window_ = w;
        cursor_ = 0;
        lead_ = 0;
        // Heap events now within range join their window's FIFO, in (t, seq) order.
        while (!far_.empty() && far_.top().t / kSlots - window_ < kWindows) {
            const Far f = far_.top();
            const uint64_t fw = f.t / kSlots;
            far_.pop();
            if (fw == window_) {
                append_fine(alloc(f.t, f.p));
            } else {
                append_coarse(fw, f.t, f.p);
            }
        }
        // The window's FIFO onto the wheel. (Heap events never share a window with a FIFO:
        // the heap only holds windows at least kWindows ahead of the present one, and a
        // jump happens only when every FIFO is empty.)
        std::vector<Entry>& fifo = coarse_[window_ % kWindows];
        for (const Entry& e : fifo) append_fine(alloc(e.t, e.p));
        coarse_count_ -= fifo.size();
        fifo.clear();
        return true;
    }

    HugeVector<Node> nodes_;
    std::vector<uint32_t> free_;
    std::vector<uint32_t> head_, tail_;       // per slot of the present window; kNil when empty
    std::vector<uint64_t> bits_;              // per slot: non-empty
    std::vector<std::vector<Entry>> coarse_;  // per window, by window % kWindows
    std::vector<Entry> outbox_;               // for coarse_, scheduled in the present window
    uint64_t window_ = 0;                     // the present window (time / kSlots)
    uint32_t cursor_ = 0;                     // slot of the last pop: nothing earlier is left
    uint32_t lead_ = 0;                       // first slot not yet announced
    std::size_t near_ = 0;                    // events in the present window
    std::size_t coarse_count_ = 0;
    uint64_t seq_ = 0;
    std::priority_queue<Far, std::vector<Far>, std::greater<Far>> far_;
};

}  // namespace insert::gen

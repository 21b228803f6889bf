// The simulator's event queue: events come out in (time, order of scheduling) - exactly the
// order of a binary heap on (t, sequence number), which is what makes a run reproducible -
// but in O(1) for the near future.
//
// `large` runs ~3 events per packet, almost all of them within a few microseconds of the
// present (serialization, propagation, ACK coalescing), while every connection also keeps
// a post and a timer event hundreds of microseconds ahead; a heap over all of them (~100k)
// cost a cache miss per level on every push and pop. Here the present window of
// 2^16 ns is a wheel of one FIFO per nanosecond; later events wait in a heap and move into
// the wheel, in heap order, when the window reaches them.
//
// Why FIFOs give the heap's order: an event in a wheel slot was either scheduled while the
// window already covered its time, or moved from the heap when the window advanced. All
// moves for a window happen at once, before anything is scheduled inside that window, in
// (t, seq) order; events scheduled later have later sequence numbers. So each slot holds
// its events in sequence order.
#pragma once

#include <bit>
#include <cstdint>
#include <queue>
#include <vector>

namespace insert::gen {

template <typename Payload>
class EventQueue {
  public:
    EventQueue() : head_(kSlots, kNil), tail_(kSlots, kNil), bits_(kSlots / 64, 0) {}

    // `t` must not be earlier than the time of the last pop.
    void push(uint64_t t, const Payload& p) {
        if (t - window_ < kSlots)
            append(t, p);
        else
            far_.push(Far{t, seq_++, p});
    }

    // The earliest event (ties: the first scheduled); false when none is left.
    bool pop(uint64_t& t, Payload& p) {
        if (near_ == 0) {
            if (far_.empty()) return false;
            // Nothing left in the window: jump to the window of the earliest later event.
            window_ = far_.top().t & ~(kSlots - 1);
            cursor_ = 0;
            while (!far_.empty() && far_.top().t - window_ < kSlots) {
                append(far_.top().t, far_.top().p);
                far_.pop();
            }
        }
        // The first non-empty slot at or after the cursor (there is one: near_ > 0).
        std::size_t w = cursor_ / 64;
        uint64_t word = bits_[w] & (~uint64_t{0} << (cursor_ % 64));
        while (word == 0) word = bits_[++w];
        cursor_ = static_cast<uint32_t>(w * 64 + static_cast<unsigned>(std::countr_zero(word)));
        const uint32_t n = head_[cursor_];
        Node& node = nodes_[n];
        head_[cursor_] = node.next;
        if (node.next == kNil) {
            tail_[cursor_] = kNil;
            bits_[w] &= ~(uint64_t{1} << (cursor_ % 64));
        }
        --near_;
        t = window_ + cursor_;
        p = node.p;
        free_.push_back(n);
        return true;
    }

    bool empty() const { return near_ == 0 && far_.empty(); }

  private:
    static constexpr uint64_t kSlots = uint64_t{1} << 16;
    static constexpr uint32_t kNil = 0xFFFFFFFF;

    struct Node {
        Payload p;
        uint32_t next;
    };
    struct Far {
        uint64_t t;
        uint64_t seq;
        Payload p;
        bool operator>(const Far& o) const { return t != o.t ? t > o.t : seq > o.seq; }
    };

    void append(uint64_t t, const Payload& p) {
        uint32_t n;
        if (!free_.empty()) {
            n = free_.back();
            free_.pop_back();
            nodes_[n] = Node{p, kNil};
        } else {
            n = static_cast<uint32_t>(nodes_.size());
            nodes_.push_back(Node{p, kNil});
        }
        const auto slot = static_cast<uint32_t>(t - window_);
        if (tail_[slot] == kNil) {
            head_[slot] = n;
            bits_[slot / 64] |= uint64_t{1} << (slot % 64);
        } else {
            nodes_[tail_[slot]].next = n;
        }
        tail_[slot] = n;
        ++near_;
    }

    std::vector<Node> nodes_;
    std::vector<uint32_t> free_;
    std::vector<uint32_t> head_, tail_;  // per slot: first and last node, kNil when empty
    std::vector<uint64_t> bits_;         // per slot: non-empty
    uint64_t window_ = 0;                // time of slot 0 (a multiple of kSlots)
    uint32_t cursor_ = 0;                // slot of the last pop: nothing earlier is left
    std::size_t near_ = 0;               // events in the wheel
    uint64_t seq_ = 0;
    std::priority_queue<Far, std::vector<Far>, std::greater<Far>> far_;
};

}  // namespace insert::gen

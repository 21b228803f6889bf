#include "bench/gen/pipeline.hpp"

#include <array>
#include <atomic>
#include <memory>
#include <thread>

#include "bench/gen/broadcast_ring.hpp"
#include "bench/gen/frame_encoder.hpp"
#include "bench/gen/pcap_out.hpp"
#include "bench/gen/ring_packet.hpp"
#include "bench/gen/truth_json.hpp"

namespace insert::gen {

void FrameWriter::write(const SimPacket& p) {
    uint8_t* const out = pcap_ ? pcap_->frame_buffer(kMaxFrameBytes) : nullptr;
    const std::span<const uint8_t> frame =
        out ? std::span<const uint8_t>(out, encoder_.encode_into(p, out)) : encoder_.encode(p);
    if (frame.empty()) {
        ++encode_failures;
        return;
    }
    if (pcap_) pcap_->commit(p.t_ns, frame.size());
    if (on_frame_) on_frame_(p, frame);
    ++frames;
}

namespace {

// 16k packets (2 MB) of slack between the threads: with more threads than cores, a
// consumer may be descheduled for a few milliseconds (a few thousand packets) at a time.
constexpr std::size_t kRingPackets = 16384;
constexpr std::size_t kRingMsgs = 8192;
constexpr std::size_t kRingBatch = 256;
// Consumers release what they have processed every this many items, so that a full ring
// does not hold the producer back for a whole span.
constexpr std::size_t kReleaseEvery = 256;
constexpr unsigned kTruthConsumer = 0, kFrameConsumer = 1;
// The truth thread announces a packet in three stages this many packets before observing
// it (TruthObserver::prefetch_early...), so that its endpoints, window word and message
// state - random lines among 100k QPs - are on their way.
constexpr std::size_t kPrefetchEarly = 12, kPrefetchAhead = 8, kPrefetchLate = 4;

// Both consumers load ring slots this many packets ahead: the simulator's core wrote them,
// and the first touch of each line is a transfer from that core.
constexpr std::size_t kPrefetchRing = 24;

using PacketRing = BroadcastRing<RingPacket>;

void prefetch_slot(const RingPacket& r) {
    __builtin_prefetch(&r);
    __builtin_prefetch(reinterpret_cast<const char*>(&r) + 64);
}
using MsgRing = BroadcastRing<TruthMsg>;

// The simulator's end of the pipeline.
class RingSink : public ObservedSink {
  public:
    explicit RingSink(PacketRing& ring) : ring_(ring) {}
    void observe(const SimPacket& p) override {
        pack(p, ring_.slot());
        ring_.commit();
    }

  private:
    PacketRing& ring_;
};

// The truth thread's msg records, on their way to the output thread's truth file.
class MsgRingSink : public TruthMsgSink {
  public:
    explicit MsgRingSink(MsgRing& ring) : ring_(ring) {}
    void on_msg(const TruthMsg& m) override {
        ring_.slot() = m;
        ring_.commit();
    }

  private:
    MsgRing& ring_;
};

// The truth thread: every packet through the observer, then the end of the capture. Each
// packet is unpacked once, when it enters the prefetch stages, into a small window that
// stays in L1 for its later stages and observe().
void observe_all(PacketRing& ring, TruthObserver& truth) {
    constexpr std::size_t kWindow = 16;  // > kPrefetchEarly, a power of two
    static_assert(kWindow > kPrefetchEarly && (kWindow & (kWindow - 1)) == 0);
    std::array<SimPacket, kWindow> window;
    auto at = [&](std::size_t i) -> SimPacket& { return window[i % kWindow]; };
    for (;;) {
        const std::span<const RingPacket> batch = ring.acquire(kTruthConsumer);
        if (batch.empty()) break;
        for (std::size_t i = 0; i < std::min(kPrefetchEarly, batch.size()); ++i)
            unpack(batch[i], at(i));
        std::size_t released = 0;
        for (std::size_t i = 0; i < batch.size(); ++i) {
            if (i + kPrefetchRing < batch.size()) prefetch_slot(batch[i + kPrefetchRing]);
            if (i + kPrefetchEarly < batch.size()) {
                unpack(batch[i + kPrefetchEarly], at(i + kPrefetchEarly));
                truth.prefetch_early(at(i + kPrefetchEarly));
            }
            if (i + kPrefetchAhead < batch.size()) truth.prefetch(at(i + kPrefetchAhead));
            if (i + kPrefetchLate < batch.size()) truth.prefetch_late(at(i + kPrefetchLate));
            truth.observe(at(i));
            if (i + 1 - released == kReleaseEvery) {
                ring.release(kTruthConsumer, kReleaseEvery);
                released = i + 1;
            }
        }
        ring.release(kTruthConsumer, batch.size() - released);
    }
    truth.finish();
}

// The output thread: frames into the pcap (RoCE frames are encoded straight into its
// buffer) and, with a truth file, the msg records into it, whichever is ready; then the
// rest of the truth file once the truth thread is done (its msg ring is closed then).
class Output {
  public:
    Output(FrameWriter* frames, PacketRing& packets, MsgRing* msgs, TruthJsonWriter* truth_file)
        : frames_(frames), packets_(packets), msgs_(msgs), truth_file_(truth_file) {}

    void run(std::atomic<uint32_t>& doorbell, const TruthObserver& truth) {
        const bool frames = frames_ != nullptr;
        for (;;) {
            const uint32_t seen = doorbell.load(std::memory_order_acquire);
            bool idle = true;
            if (frames) idle &= !encode(packets_.try_acquire(kFrameConsumer));
            if (msgs_) idle &= !format(msgs_->try_acquire(0));
            if (!idle) continue;
            const bool frames_done = !frames || packets_.drained(kFrameConsumer);
            const bool msgs_done = !msgs_ || msgs_->drained(0);
            if (frames_done && msgs_done) break;
            doorbell.wait(seen, std::memory_order_acquire);
        }
        if (truth_file_) result.truth_ok = truth_file_->finish(truth, result.truth_error);
    }

    StagesResult result;

  private:
    bool encode(std::span<const RingPacket> batch) {
        batch = batch.first(std::min(batch.size(), kReleaseEvery));
        SimPacket p;
        for (std::size_t i = 0; i < batch.size(); ++i) {
            if (i + kPrefetchRing < batch.size()) prefetch_slot(batch[i + kPrefetchRing]);
            unpack(batch[i], p);
            frames_->write(p);
        }
        if (!batch.empty()) packets_.release(kFrameConsumer, batch.size());
        return !batch.empty();
    }
    bool format(std::span<const TruthMsg> batch) {
        batch = batch.first(std::min(batch.size(), kReleaseEvery));
        for (const TruthMsg& m : batch) truth_file_->on_msg(m);
        if (!batch.empty()) msgs_->release(0, batch.size());
        return !batch.empty();
    }

    FrameWriter* frames_;
    PacketRing& packets_;
    MsgRing* msgs_;
    TruthJsonWriter* truth_file_;
};

// run_inline()'s sink: each observed packet to the truth and to the frames, at once.
class InlineSink : public ObservedSink {
  public:
    InlineSink(TruthObserver& truth, FrameWriter* frames) : truth_(truth), frames_(frames) {}
    void observe(const SimPacket& p) override {
        truth_.observe(p);
        if (frames_) frames_->write(p);
    }
    void prefetch(const SimPacket& p) override { truth_.prefetch(p); }
    void prefetch_conn(uint32_t conn) override { truth_.prefetch_conn(conn); }

  private:
    TruthObserver& truth_;
    FrameWriter* frames_;
};

}  // namespace

StagesResult run_inline(const Stages& s) {
    if (s.truth_file) s.truth.set_msg_sink(s.truth_file);
    InlineSink sink(s.truth, s.frames);
    s.sim.run(sink);
    s.truth.finish();
    s.truth.set_msg_sink(nullptr);
    StagesResult result;
    if (s.truth_file) result.truth_ok = s.truth_file->finish(s.truth, result.truth_error);
    return result;
}

StagesResult run_threaded(const Stages& s) {
    std::atomic<uint32_t> doorbell{0};  // the output thread waits on both of its rings
    PacketRing packets(kRingPackets, kRingBatch, s.frames ? 2 : 1, &doorbell);
    std::unique_ptr<MsgRing> msgs;
    std::unique_ptr<MsgRingSink> msg_sink;
    if (s.truth_file) {
        msgs = std::make_unique<MsgRing>(kRingMsgs, kRingBatch, 1, &doorbell);
        msg_sink = std::make_unique<MsgRingSink>(*msgs);
        s.truth.set_msg_sink(msg_sink.get());
    }
    Output output(s.frames, packets, msgs.get(), s.truth_file);
    {
        std::jthread truth_thread([&] {
            observe_all(packets, s.truth);
            if (msgs) msgs->close();
        });
        std::jthread output_thread;
        if (s.frames || s.truth_file)
            output_thread = std::jthread([&] { output.run(doorbell, s.truth); });
        RingSink sink(packets);
        s.sim.run(sink);
        packets.close();
    }  // joins both
    s.truth.set_msg_sink(nullptr);
    return output.result;
}

}  // namespace insert::gen

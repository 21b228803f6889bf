#include "bench/gen/pipeline.hpp"

#include <tbb/parallel_pipeline.h>

#include <algorithm>
#include <array>
#include <memory>
#include <vector>

#include "bench/gen/frame_encoder.hpp"
#include "bench/gen/pcap_out.hpp"
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

// A batch of observed packets on its way through the pipeline, and the truth's msg records
// that froze while they were observed. The simulator reuses a packet's slot as soon as it is
// observed, so the batch holds copies (values only: a SimPacket points at nothing).
struct Batch {
    std::unique_ptr<SimPacket[]> packets;
    std::size_t size = 0;
    std::vector<TruthMsg> msgs;
    bool last = false;  // the simulation ended with it: the truth finishes after it
};

// 2048 packets (368 KB) a batch, 4 batches in flight: the three stages each work on one,
// with one of slack for a stage descheduled for a moment (the machine may have fewer cores
// than the pipeline has stages).
constexpr std::size_t kBatchPackets = 2048;
constexpr std::size_t kBatchSlots = kBatchPackets + 1;  // an event observes up to two
constexpr std::size_t kBatches = 4;
constexpr std::size_t kBatchMsgs = 1024;  // to start with; grows as needed, once

// The truth stage announces a packet in three stages this many packets before observing
// it (TruthObserver::prefetch_early...), so that its endpoints, window word and message
// state - random lines among 100k QPs - are on their way.
constexpr std::size_t kPrefetchEarly = 12, kPrefetchAhead = 8, kPrefetchLate = 4;
// Both consumer stages load packets this many ahead: another core may have written them.
constexpr std::size_t kPrefetchBatch = 24;

void prefetch_packet(const SimPacket& p) {
    static_assert(sizeof(SimPacket) <= 192);
    const char* const at = reinterpret_cast<const char*>(&p);
    __builtin_prefetch(at);
    __builtin_prefetch(at + 64);
    __builtin_prefetch(at + sizeof(SimPacket) - 1);
}

// The simulator's end of the pipeline: copies into the batch being filled.
class BatchSink : public ObservedSink {
  public:
    void observe(const SimPacket& p) override { batch->packets[batch->size++] = p; }
    Batch* batch = nullptr;
};

// The truth stage's msg records, kept with their batch for the output stage.
class BatchMsgSink : public TruthMsgSink {
  public:
    void on_msg(const TruthMsg& m) override { batch->msgs.push_back(m); }
    Batch* batch = nullptr;
};

// The truth stage: every packet of a batch through the observer, with its prefetch stages.
void observe_batch(const Batch& b, TruthObserver& truth) {
    const SimPacket* const p = b.packets.get();
    const std::size_t n = b.size;
    for (std::size_t i = 0; i < std::min(kPrefetchEarly, n); ++i) truth.prefetch_early(p[i]);
    for (std::size_t i = 0; i < n; ++i) {
        if (i + kPrefetchBatch < n) prefetch_packet(p[i + kPrefetchBatch]);
        if (i + kPrefetchEarly < n) truth.prefetch_early(p[i + kPrefetchEarly]);
        if (i + kPrefetchAhead < n) truth.prefetch(p[i + kPrefetchAhead]);
        if (i + kPrefetchLate < n) truth.prefetch_late(p[i + kPrefetchLate]);
        truth.observe(p[i]);
    }
}

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
    std::array<Batch, kBatches> batches;
    for (Batch& b : batches) {
        b.packets = std::make_unique_for_overwrite<SimPacket[]>(kBatchSlots);
        if (s.truth_file) b.msgs.reserve(kBatchMsgs);
    }
    BatchSink sink;
    BatchMsgSink msg_sink;
    if (s.truth_file) s.truth.set_msg_sink(&msg_sink);
    StagesResult result;
    std::size_t next = 0;
    bool done = false;
    auto simulate = [&](tbb::flow_control& fc) -> Batch* {
        if (done) {
            fc.stop();
            return nullptr;
        }
        Batch* const b = &batches[next++ % kBatches];
        b->size = 0;
        b->msgs.clear();
        sink.batch = b;
        done = s.sim.run_for(sink, kBatchPackets);
        b->last = done;
        return b;
    };
    auto observe = [&](Batch* b) {
        msg_sink.batch = b;
        observe_batch(*b, s.truth);
        if (b->last) s.truth.finish();
        return b;
    };
    auto output = [&](Batch* b) {
        if (s.frames) {
            const SimPacket* const p = b->packets.get();
            for (std::size_t i = 0; i < b->size; ++i) {
                if (i + kPrefetchBatch < b->size) prefetch_packet(p[i + kPrefetchBatch]);
                s.frames->write(p[i]);
            }
        }
        if (s.truth_file) {
            for (const TruthMsg& m : b->msgs) s.truth_file->on_msg(m);
            if (b->last) result.truth_ok = s.truth_file->finish(s.truth, result.truth_error);
        }
    };
    // Every stage is serial and in order, so each sees the packets in capture order and owns
    // its state alone; at most kBatches batches are in flight, so the input stage's batch
    // (next % kBatches) has left the output stage.
    constexpr auto kSerial = tbb::filter_mode::serial_in_order;
    tbb::parallel_pipeline(kBatches, tbb::make_filter<void, Batch*>(kSerial, simulate) &
                                         tbb::make_filter<Batch*, Batch*>(kSerial, observe) &
                                         tbb::make_filter<Batch*, void>(kSerial, output));
    s.truth.set_msg_sink(nullptr);
    return result;
}

}  // namespace insert::gen

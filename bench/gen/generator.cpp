#include "bench/gen/generator.hpp"

#include <atomic>
#include <cstdio>
#include <thread>

#include "bench/gen/broadcast_ring.hpp"
#include "bench/gen/frame_encoder.hpp"
#include "bench/gen/pcap_out.hpp"
#include "bench/gen/truth_json.hpp"

namespace insert::gen {

namespace {

// 16k packets (3 MB) of slack between the threads: with more threads than cores, a
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

using PacketRing = BroadcastRing<SimPacket>;
using MsgRing = BroadcastRing<TruthMsg>;

// The simulator's end of the pipeline.
class RingSink : public ObservedSink {
  public:
    explicit RingSink(PacketRing& ring) : ring_(ring) {}
    void observe(const SimPacket& p) override {
        ring_.slot() = p;
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

// The truth thread: every packet through the observer, then the end of the capture.
void observe_all(PacketRing& ring, TruthObserver& truth) {
    for (;;) {
        const std::span<const SimPacket> batch = ring.acquire(kTruthConsumer);
        if (batch.empty()) break;
        std::size_t released = 0;
        for (std::size_t i = 0; i < batch.size(); ++i) {
            if (i + kPrefetchEarly < batch.size()) truth.prefetch_early(batch[i + kPrefetchEarly]);
            if (i + kPrefetchAhead < batch.size()) truth.prefetch(batch[i + kPrefetchAhead]);
            if (i + kPrefetchLate < batch.size()) truth.prefetch_late(batch[i + kPrefetchLate]);
            truth.observe(batch[i]);
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
    Output(FrameEncoder& encoder, PcapOut* pcap, const Generation::FrameCallback& on_frame,
           PacketRing& packets, MsgRing* msgs, TruthJsonWriter* truth_file)
        : encoder_(encoder),
          pcap_(pcap),
          on_frame_(on_frame),
          packets_(packets),
          msgs_(msgs),
          truth_file_(truth_file) {}

    void run(std::atomic<uint32_t>& doorbell, const TruthObserver& truth) {
        const bool frames = pcap_ || on_frame_;
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
        if (truth_file_) truth_ok_ = truth_file_->finish(truth, truth_error_);
    }

    uint64_t frames = 0, encode_failures = 0;
    bool truth_ok_ = true;
    std::string truth_error_;

  private:
    bool encode(std::span<const SimPacket> batch) {
        batch = batch.first(std::min(batch.size(), kReleaseEvery));
        for (const SimPacket& p : batch) {
            uint8_t* const out = pcap_ ? pcap_->frame_buffer(kMaxFrameBytes) : nullptr;
            const std::span<const uint8_t> frame =
                out ? std::span<const uint8_t>(out, encoder_.encode_into(p, out))
                    : encoder_.encode(p);
            if (frame.empty()) {
                ++encode_failures;
                continue;
            }
            if (pcap_) pcap_->commit(p.t_ns, frame.size());
            if (on_frame_) on_frame_(p, frame);
            ++frames;
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

    FrameEncoder& encoder_;
    PcapOut* pcap_;
    const Generation::FrameCallback& on_frame_;
    PacketRing& packets_;
    MsgRing* msgs_;
    TruthJsonWriter* truth_file_;
};

}  // namespace

Generation::Generation(Scenario scenario, uint64_t seed)
    : scenario_(std::move(scenario)), seed_(seed) {
    sim_ = std::make_unique<Simulator>(scenario_, seed_);
    truth_ = std::make_unique<TruthObserver>(scenario_, *sim_);
}

Generation::~Generation() = default;

bool Generation::run_pipeline(PcapOut* pcap, TruthJsonWriter* truth_file,
                              const FrameCallback& on_frame, std::string& error, Failed& failed) {
    const bool frames = pcap || on_frame;
    std::atomic<uint32_t> doorbell{0};  // the output thread waits on both of its rings
    PacketRing packets(kRingPackets, kRingBatch, frames ? 2 : 1, &doorbell);
    std::unique_ptr<MsgRing> msgs;
    std::unique_ptr<MsgRingSink> msg_sink;
    if (truth_file) {
        msgs = std::make_unique<MsgRing>(kRingMsgs, kRingBatch, 1, &doorbell);
        msg_sink = std::make_unique<MsgRingSink>(*msgs);
        truth_->set_msg_sink(msg_sink.get());
    }
    FrameEncoder encoder(scenario_, *sim_);
    Output output(encoder, pcap, on_frame, packets, msgs.get(), truth_file);
    {
        std::jthread truth_thread([&] {
            observe_all(packets, *truth_);
            if (msgs) msgs->close();
        });
        std::jthread output_thread;
        if (frames || truth_file)
            output_thread = std::jthread([&] { output.run(doorbell, *truth_); });
        RingSink sink(packets);
        sim_->run(sink);
        packets.close();
    }  // joins both
    truth_->set_msg_sink(nullptr);
    frames_ = output.frames;
    if (output.encode_failures > 0) {
        error = "internal error: " + std::to_string(output.encode_failures) +
                " packets could not be encoded";
        failed = Failed::pcap;
        return false;
    }
    if (!output.truth_ok_) {
        error = output.truth_error_;
        failed = Failed::truth;
        return false;
    }
    return true;
}

bool Generation::run(const std::string& pcap_path, std::string& error,
                     const FrameCallback& on_frame) {
    PcapOut writer;
    PcapOut* pcap = nullptr;
    if (!pcap_path.empty()) {
        if (!writer.open(pcap_path, 65535)) {
            error = writer.error();
            return false;
        }
        pcap = &writer;
    }
    Failed failed = Failed::nothing;
    const bool ran = run_pipeline(pcap, nullptr, on_frame, error, failed);
    if (pcap && (!writer.close() || !ran)) {
        if (ran) error = writer.error();
        std::remove(pcap_path.c_str());
        return false;
    }
    return ran;
}

Generation::Failed Generation::run_to_files(const std::string& pcap_path,
                                            const std::string& truth_path, std::string& error) {
    PcapOut pcap;
    if (!pcap.open(pcap_path, 65535)) {
        error = pcap.error();
        return Failed::pcap;
    }
    auto fail = [&](Failed which) {
        pcap.close();
        std::remove(pcap_path.c_str());
        return which;
    };
    TruthJsonWriter truth_file(scenario_);
    if (!truth_file.open(truth_path, {scenario_.name, seed_}, error)) return fail(Failed::truth);
    Failed failed = Failed::nothing;
    const bool ran = run_pipeline(&pcap, &truth_file, {}, error, failed);
    if (ran && pcap.close()) return Failed::nothing;
    if (ran) error = pcap.error(), failed = Failed::pcap;
    std::remove(truth_path.c_str());  // finished or not (an unfinished one is removed anyway)
    return fail(failed);
}

bool Generation::write_truth(const std::string& path, std::string& error) const {
    return write_truth_json(scenario_, *truth_, {scenario_.name, seed_}, path, error);
}

}  // namespace insert::gen

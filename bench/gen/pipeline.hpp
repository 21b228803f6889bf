// The stages of a generation run - the simulator, the truth observer, the output (frames
// into the pcap, msg records into the truth file) - and the two ways of joining them:
// all on the calling thread, or a pipeline of three stages on oneTBB's threads. Either way
// each stage sees the packets in capture order and owns its state alone, so the bytes are
// the same.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "bench/gen/simulator.hpp"
#include "bench/gen/truth.hpp"

namespace insert::gen {

class FrameEncoder;
class PcapOut;
class TruthJsonWriter;

using FrameCallback = std::function<void(const SimPacket&, std::span<const uint8_t>)>;

// Frames into the pcap (RoCE frames are encoded straight into its buffer) and/or to a
// callback.
class FrameWriter {
  public:
    FrameWriter(FrameEncoder& encoder, PcapOut* pcap, const FrameCallback& on_frame)
        : encoder_(encoder), pcap_(pcap), on_frame_(on_frame) {}
    void write(const SimPacket& p);

    uint64_t frames = 0;
    uint64_t encode_failures = 0;

  private:
    FrameEncoder& encoder_;
    PcapOut* pcap_;
    const FrameCallback& on_frame_;
};

struct Stages {
    Simulator& sim;
    TruthObserver& truth;
    FrameWriter* frames = nullptr;          // none: no frames wanted
    TruthJsonWriter* truth_file = nullptr;  // none: the truth keeps its msg records
};

// What the truth file's writer said at the end (after TruthObserver::finish()).
struct StagesResult {
    bool truth_ok = true;
    std::string truth_error;
};

// Everything on the calling thread: no copies between threads, no wake-ups; for one core,
// or to leave the others free.
StagesResult run_inline(const Stages& stages);

// A oneTBB parallel_pipeline of three serial, in-order stages - the simulator filling a
// batch of packets, the truth observer, the output - with a few batches in flight, so that
// the stages overlap on different batches. With two free cores, about half the wall time of
// run_inline() for about the same CPU time (measured on `large`, docs/insert-gen.md).
StagesResult run_threaded(const Stages& stages);

}  // namespace insert::gen

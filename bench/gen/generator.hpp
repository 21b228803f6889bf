// One generation run: simulate a scenario, write the observed frames to a nanosecond pcap
// and compute the ground truth from the same stream of observed packets.
//
// A run is a pipeline of three threads joined by a BroadcastRing: the simulator (the
// calling thread) puts each observed packet into the ring; one thread feeds them to the
// truth observer (and, with run_to_files(), writes each msg record as it freezes), another
// encodes the frames and writes the pcap. Each consumer sees every packet in capture order
// and owns its state alone, so the bytes do not depend on how the threads are scheduled.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "bench/gen/scenario.hpp"
#include "bench/gen/simulator.hpp"
#include "bench/gen/truth.hpp"

namespace insert::gen {

class PcapOut;
class TruthJsonWriter;

class Generation {
  public:
    // Called for every frame, on the frame thread, in capture order.
    using FrameCallback = std::function<void(const SimPacket&, std::span<const uint8_t>)>;
    enum class Failed { nothing, pcap, truth };  // which file a run could not write

    Generation(Scenario scenario, uint64_t seed);
    ~Generation();

    // Runs the scenario. Frames go to `pcap_path` (skipped when empty) and to `on_frame`
    // (when set); false with `error` if the pcap cannot be written. The truth stays in
    // memory: truth().msgs(), write_truth().
    bool run(const std::string& pcap_path, std::string& error, const FrameCallback& on_frame = {});
    // Runs the scenario writing the pcap and the truth file, the truth's msg records while
    // the simulation runs (they are not kept: truth().msgs() stays empty). What insert-gen
    // does; the same bytes as run() + write_truth(). A failed run leaves neither file.
    Failed run_to_files(const std::string& pcap_path, const std::string& truth_path,
                        std::string& error);
    bool write_truth(const std::string& path, std::string& error) const;

    const Scenario& scenario() const { return scenario_; }
    const Simulator& sim() const { return *sim_; }
    const TruthObserver& truth() const { return *truth_; }
    uint64_t seed() const { return seed_; }
    uint64_t frames() const { return frames_; }

  private:
    bool run_pipeline(PcapOut* pcap, TruthJsonWriter* truth_file, const FrameCallback& on_frame,
                      std::string& error, Failed& failed);

    Scenario scenario_;
    uint64_t seed_;
    std::unique_ptr<Simulator> sim_;
    std::unique_ptr<TruthObserver> truth_;
    uint64_t frames_ = 0;
};

}  // namespace insert::gen

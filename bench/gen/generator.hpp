// One generation run: simulate a scenario, write the observed frames to a nanosecond pcap
// and compute the ground truth from the same stream of observed packets.
//
// By default a run is a oneTBB pipeline of three stages over batches of packets
// (pipeline.hpp): the simulator, the truth observer (which, with run_to_files(), hands the
// msg records that freeze to the output with their batch) and the output (frames into the
// pcap, records into the truth file). Each stage is serial, sees every packet in capture
// order and owns its state alone, so the bytes do not depend on how oneTBB's threads are
// scheduled, nor on set_threaded().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "bench/gen/pipeline.hpp"
#include "bench/gen/scenario.hpp"
#include "bench/gen/simulator.hpp"
#include "bench/gen/truth.hpp"

namespace insert::gen {

class PcapOut;
class TruthJsonWriter;

class Generation {
  public:
    // Called for every frame in capture order (by the output stage when threaded: one call
    // at a time, on whichever of oneTBB's threads runs it).
    using FrameCallback = gen::FrameCallback;
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
    // The pipeline (the default) or all on the calling thread (pipeline.hpp); same bytes.
    void set_threaded(bool threaded) { threaded_ = threaded; }
    bool threaded() const { return threaded_; }
    // Before a run: the simulator records what the host traces need, and run_to_files()
    // keeps the msg records it writes (msgs()).
    void record_host_events();
    // The truth's msg records: kept by the observer (run()), or by run_to_files() after
    // record_host_events().
    std::span<const TruthMsg> msgs() const;

    const Scenario& scenario() const { return scenario_; }
    const Simulator& sim() const { return *sim_; }
    const TruthObserver& truth() const { return *truth_; }
    uint64_t seed() const { return seed_; }
    uint64_t frames() const { return frames_; }

  private:
    bool run_stages(PcapOut* pcap, TruthJsonWriter* truth_file, const FrameCallback& on_frame,
                    std::string& error, Failed& failed);

    Scenario scenario_;
    uint64_t seed_;
    std::unique_ptr<Simulator> sim_;
    std::unique_ptr<TruthObserver> truth_;
    uint64_t frames_ = 0;
    bool threaded_ = true;
    bool keep_msgs_ = false;
    HugeVector<TruthMsg> kept_msgs_;
};

}  // namespace insert::gen

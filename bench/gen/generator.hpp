// One generation run: simulate a scenario, write the observed frames to a nanosecond pcap
// and compute the ground truth from the same stream of observed packets.
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

class Generation {
  public:
    Generation(Scenario scenario, uint64_t seed);

    // Runs the scenario. Frames go to `pcap_path` (skipped when empty) and to `on_frame`
    // (when set); false with `error` if the pcap cannot be written.
    bool run(const std::string& pcap_path, std::string& error,
             const std::function<void(const SimPacket&, std::span<const uint8_t>)>& on_frame = {});
    bool write_truth(const std::string& path, std::string& error) const;

    const Scenario& scenario() const { return scenario_; }
    const Simulator& sim() const { return *sim_; }
    const TruthObserver& truth() const { return *truth_; }
    uint64_t seed() const { return seed_; }
    uint64_t frames() const { return frames_; }

  private:
    Scenario scenario_;
    uint64_t seed_;
    std::unique_ptr<Simulator> sim_;
    std::unique_ptr<TruthObserver> truth_;
    uint64_t frames_ = 0;
};

}  // namespace insert::gen

// Puts a RulePlan on a port: every rule validated before it is created, alternatives tried
// best first. A port takes the whole plan or none of it - half the rules in hardware and
// half in software would send some frames to queues nobody reads - so one refusal removes
// what was created and hands the plan to the software classifier: one log line, and the
// refused rules counted in the port's OffloadState (shown by /insert/offload).
#pragma once

#include <rte_flow.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dataplane/offload/flow_rules.hpp"
#include "dataplane/offload/soft_classifier.hpp"

namespace insert::offload {

enum class OffloadMode : uint8_t {
    off,        // no rte_flow: every frame goes through software RSS (the replay path)
    automatic,  // hardware where the port takes the rules, else the emulated classifier
    require,    // hardware or an error
};
std::optional<OffloadMode> parse_offload_mode(std::string_view name);
std::string_view offload_mode_name(OffloadMode mode);

struct OffloadState {
    uint16_t port = 0;
    std::string driver;
    bool hardware = false;                  // the whole plan runs in the NIC
    bool emulated = false;                  // the plan runs in SoftClassifier
    unsigned rules = 0;                     // rules in the plan
    unsigned refused = 0;                   // rules the port refused (validate or create)
    std::string reason;                     // the first refusal, or why the plan is empty
    std::vector<std::string> descriptions;  // describe() of each rule as installed/emulated
    std::vector<rte_flow*> flows;           // created in hardware
    SoftClassifier classifier;              // the plan, when emulated
    // Frames the emulated classifier steered, by rule (single writer: the polling lcore).
    std::vector<std::atomic<uint64_t>> hits;
};

// Reads what the port offers for the plan. `worker_queues`: Rx queues 0..n-1.
NicCaps read_caps(uint16_t port, uint16_t worker_queues);

// Installs (or emulates) `plan` on `port` per `mode`. False and a one-line `error` only in
// `require` mode when the port refuses, or when the plan cannot even be emulated.
bool install_plan(uint16_t port, const RulePlan& plan, OffloadMode mode, OffloadState& state,
                  std::string& error);
// Destroys the hardware rules (before the port stops).
void remove_plan(OffloadState& state);

}  // namespace insert::offload

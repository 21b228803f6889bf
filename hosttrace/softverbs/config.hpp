// Run-time knobs, read once per context from the environment (documented in
// docs/softverbs.md). Fractions are probabilities per sent packet.
#pragma once

#include <cstdint>
#include <string>

namespace insert::softverbs {

enum class SourcePort : uint8_t { symmetric, per_qp };

struct Config {
    double drop = 0;          // SOFTVERBS_DROP: fraction of packets not sent
    double reorder = 0;       // SOFTVERBS_REORDER: fraction sent after the following packet
    double delay = 0;         // SOFTVERBS_DELAY: fraction held back for delay_us
    uint32_t delay_us = 200;  // SOFTVERBS_DELAY_US
    double ecn = 0;           // SOFTVERBS_ECN: fraction sent with IP ECN = CE (11)
    uint64_t seed = 0;        // SOFTVERBS_SEED: 0 = from the clock
    SourcePort sport = SourcePort::symmetric;  // SOFTVERBS_SPORT=symmetric|per_qp
    bool verify_icrc = true;  // SOFTVERBS_VERIFY_ICRC=0 accepts packets with a bad ICRC
    bool debug = false;       // SOFTVERBS_DEBUG=1: start-up and shutdown lines on stderr
};

// Returns false and fills `error` when a variable is present but invalid.
bool load_config(Config& out, std::string& error);

}  // namespace insert::softverbs

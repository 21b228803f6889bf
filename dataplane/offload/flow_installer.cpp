#include "dataplane/offload/flow_installer.hpp"

#include <rte_errno.h>
#include <rte_ethdev.h>

#include <cstring>

#include "dataplane/common/log.hpp"

RTE_LOG_REGISTER(insert_logtype_offload, insert.offload, INFO);

namespace insert::offload {

namespace {

std::string flow_error(int rc, const rte_flow_error& e) {
    std::string s = e.message ? e.message : std::strerror(rc < 0 ? -rc : rc);
    if (s.empty()) s = "refused";
    return s;
}

// Tries the alternatives of one rule; the created flow or nullptr and `why`.
rte_flow* create_one(uint16_t port, const RuleChoice& choice, std::string& why,
                     std::string& description) {
    for (const FlowRule& r : choice.alternatives) {
        rte_flow_error err{};
        int rc = rte_flow_validate(port, &r.attr, r.pattern.data(), r.actions.data(), &err);
        if (rc != 0) {
            if (why.empty()) why = r.name + ": " + flow_error(rc, err);
            continue;
        }
        rte_flow* f = rte_flow_create(port, &r.attr, r.pattern.data(), r.actions.data(), &err);
        if (f != nullptr) {
            description = describe(r);
            return f;
        }
        if (why.empty()) why = r.name + ": create: " + flow_error(rte_errno, err);
    }
    return nullptr;
}

}  // namespace

std::optional<OffloadMode> parse_offload_mode(std::string_view name) {
    if (name == "off") return OffloadMode::off;
    if (name == "auto") return OffloadMode::automatic;
    if (name == "require") return OffloadMode::require;
    return std::nullopt;
}

std::string_view offload_mode_name(OffloadMode mode) {
    switch (mode) {
        case OffloadMode::off:
            return "off";
        case OffloadMode::automatic:
            return "auto";
        case OffloadMode::require:
            return "require";
    }
    return "?";
}

NicCaps read_caps(uint16_t port, uint16_t worker_queues) {
    NicCaps caps;
    caps.worker_queues = worker_queues;
    rte_eth_dev_info info{};
    if (rte_eth_dev_info_get(port, &info) == 0) {
        caps.driver = info.driver_name ? info.driver_name : "";
        caps.rss_types = info.flow_type_rss_offloads;
        if (info.hash_key_size) caps.hash_key_size = info.hash_key_size;
        if (info.reta_size) caps.reta_size = info.reta_size;
    }
    rte_eth_hairpin_cap hp{};
    caps.hairpin = rte_eth_dev_hairpin_capability_get(port, &hp) == 0 && hp.max_nb_queues > 0;
#if INSERT_HAVE_IB_BTH
    caps.bth_match = caps.driver == "mlx5_pci" || caps.driver == "net_mlx5";
#endif
    return caps;
}

bool install_plan(uint16_t port, const RulePlan& plan, OffloadMode mode, OffloadState& state,
                  std::string& error) {
    state.port = port;
    rte_eth_dev_info info{};
    if (rte_eth_dev_info_get(port, &info) == 0 && info.driver_name) state.driver = info.driver_name;
    state.rules = static_cast<unsigned>(plan.rules.size());
    state.hits = std::vector<std::atomic<uint64_t>>(plan.rules.size());

    if (mode != OffloadMode::off && !plan.rules.empty()) {
        std::string why;
        for (const RuleChoice& c : plan.rules) {
            std::string desc;
            rte_flow* f = create_one(port, c, why, desc);
            if (f == nullptr) {
                ++state.refused;
                continue;
            }
            state.flows.push_back(f);
            state.descriptions.push_back(desc);
        }
        if (state.refused == 0) {
            state.hardware = true;
            INSERT_LOG(INFO, offload, "port %u (%s): %u rte_flow rules in hardware", port,
                       state.driver.c_str(), state.rules);
            return true;
        }
        state.reason = why;
        remove_plan(state);
        state.descriptions.clear();
        if (mode == OffloadMode::require) {
            error = "port " + std::to_string(port) + " (" + state.driver + ") refused " +
                    std::to_string(state.refused) + " of " + std::to_string(state.rules) +
                    " rte_flow rules (" + why + ") and --offload require was given";
            return false;
        }
        // The one log line of a refusal.
        INSERT_LOG(WARNING, offload,
                   "port %u (%s) refused %u of %u rte_flow rules (%s): emulating them in "
                   "software",
                   port, state.driver.c_str(), state.refused, state.rules, why.c_str());
    } else if (mode == OffloadMode::require) {
        error = "port " + std::to_string(port) + " (" + state.driver + "): no rule plan (" +
                (plan.skipped.empty() ? std::string("empty") : plan.skipped.front()) +
                ") and --offload require was given";
        return false;
    }
    if (mode == OffloadMode::off) return true;  // software RSS, no classifier
    if (plan.rules.empty()) {
        state.reason = plan.skipped.empty() ? "empty plan" : plan.skipped.front();
        return true;
    }
    // Emulate the preferred alternative of every rule.
    for (const RuleChoice& c : plan.rules) {
        std::string why;
        if (!state.classifier.add(c.alternatives.front(), why)) {
            error = "port " + std::to_string(port) + ": cannot emulate rule " + why;
            return false;
        }
        state.descriptions.push_back(describe(c.alternatives.front()));
    }
    state.emulated = true;
    return true;
}

void remove_plan(OffloadState& state) {
    for (rte_flow* f : state.flows) {
        rte_flow_error err{};
        rte_flow_destroy(state.port, f, &err);
    }
    state.flows.clear();
    state.hardware = false;
}

}  // namespace insert::offload

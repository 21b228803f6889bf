#include "dataplane/ports/port_source.hpp"

#include <algorithm>

namespace insert::ports {

std::unique_ptr<PortSource> PortSource::create(const PortSourceConfig& config,
                                               const pipeline::MbufTimestamp& timestamp,
                                               std::string& error) {
    if (config.workers == 0) {
        error = "need at least one worker";
        return nullptr;
    }
    if (config.mode == PortMode::inline_pair && config.devices.size() != 2) {
        error = "inline mode needs exactly two ports (got " +
                std::to_string(config.devices.size()) + ")";
        return nullptr;
    }
    if (config.devices.empty()) {
        error = "no port given";
        return nullptr;
    }
    std::unique_ptr<PortSource> src(new PortSource());
    src->config_ = config;
    src->ports_ = PortSet::open(config, error);
    if (!src->ports_ || !src->install_offload(error) || !src->create_lanes(error)) return nullptr;
    const Steering::Context context{src->config_, *src->ports_, src->lanes_, src->offload_,
                                    timestamp};
    switch (src->choose_steering()) {
        case SteerMode::hardware:
            src->steering_ = hardware_steering(context);
            break;
        case SteerMode::direct:
            src->steering_ = direct_steering(context);
            break;
        case SteerMode::dispatch:
            src->steering_ = dispatch_steering(context, error);
            break;
    }
    if (!src->steering_) return nullptr;
    return src;
}

// The plan, per port; a port takes all of it or none (flow_installer.hpp), and the run
// steers in hardware only when every port took it - otherwise no port keeps its rules.
bool PortSource::install_offload(std::string& error) {
    bool all_hardware = config_.offload != offload::OffloadMode::off;
    for (const PortInfo& p : ports_->ports()) {
        auto state = std::make_unique<offload::OffloadState>();
        offload::NicCaps caps = offload::read_caps(p.id, static_cast<uint16_t>(config_.workers));
        // The plan may target the hairpin queue only where one was set up and bound.
        caps.hairpin = caps.hairpin && p.hairpin;
        const offload::RulePlan plan = offload::build_insert_rules(caps);
        if (!offload::install_plan(p.id, plan, config_.offload, *state, error)) return false;
        all_hardware = all_hardware && state->hardware;
        offload_.push_back(std::move(state));
    }
    if (!all_hardware)
        for (auto& o : offload_) offload::remove_plan(*o);
    return true;
}

SteerMode PortSource::choose_steering() const {
    const bool all_hardware =
        !offload_.empty() &&
        std::all_of(offload_.begin(), offload_.end(), [](const auto& o) { return o->hardware; });
    if (all_hardware) return SteerMode::hardware;
    return config_.workers == 1 ? SteerMode::direct : SteerMode::dispatch;
}

bool PortSource::create_lanes(std::string& error) {
    for (unsigned l = 0; l <= config_.workers; ++l) {
        auto lane = Lane::create(l, *ports_, error);
        if (!lane) return false;
        lanes_.push_back(std::move(lane));
    }
    return true;
}

PortSource::~PortSource() {
    for (auto& o : offload_) offload::remove_plan(*o);
    // Then the members in reverse: the steering's rings and the lanes' Tx buffers give
    // their mbufs back before the ports stop and the pool goes.
}

uint64_t PortSource::received() const {
    uint64_t n = 0;
    for (const auto& l : lanes_) n += l->counters.rx.load(std::memory_order_relaxed);
    return n;
}

uint64_t PortSource::passthrough() const {
    uint64_t n = 0;
    for (const auto& l : lanes_) n += l->counters.passthrough.load(std::memory_order_relaxed);
    return n;
}

pipeline::SourceProgress PortSource::progress() const noexcept {
    pipeline::SourceProgress p;
    p.frames = received();
    p.fraction = -1;
    return p;
}

}  // namespace insert::ports

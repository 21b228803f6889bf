#include "bench/gen/generator.hpp"

#include <cstdio>

#include "bench/gen/frame_encoder.hpp"
#include "bench/gen/pcap_out.hpp"
#include "bench/gen/truth_json.hpp"

namespace insert::gen {

Generation::Generation(Scenario scenario, uint64_t seed)
    : scenario_(std::move(scenario)), seed_(seed) {
    sim_ = std::make_unique<Simulator>(scenario_, seed_);
    truth_ = std::make_unique<TruthObserver>(scenario_, *sim_);
}

Generation::~Generation() = default;

bool Generation::run_stages(PcapOut* pcap, TruthJsonWriter* truth_file,
                            const FrameCallback& on_frame, std::string& error, Failed& failed) {
    FrameEncoder encoder(scenario_, *sim_);
    FrameWriter frames(encoder, pcap, on_frame);
    const Stages stages{*sim_, *truth_, pcap || on_frame ? &frames : nullptr, truth_file};
    const StagesResult result = threaded_ ? run_threaded(stages) : run_inline(stages);
    frames_ = frames.frames;
    if (frames.encode_failures > 0) {
        error = "internal error: " + std::to_string(frames.encode_failures) +
                " packets could not be encoded";
        failed = Failed::pcap;
        return false;
    }
    if (!result.truth_ok) {
        error = result.truth_error;
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
    const bool ran = run_stages(pcap, nullptr, on_frame, error, failed);
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
    struct Keep : TruthMsgSink {
        HugeVector<TruthMsg>& out;
        explicit Keep(HugeVector<TruthMsg>& o) : out(o) {}
        void on_msg(const TruthMsg& m) override { out.push_back(m); }
    } keep(kept_msgs_);
    if (keep_msgs_) {
        kept_msgs_.reserve(sim_->messages().size());
        truth_file.set_tap(&keep);
    }
    Failed failed = Failed::nothing;
    const bool ran = run_stages(&pcap, &truth_file, {}, error, failed);
    if (ran && pcap.close()) return Failed::nothing;
    if (ran) error = pcap.error(), failed = Failed::pcap;
    std::remove(truth_path.c_str());  // finished or not (an unfinished one is removed anyway)
    return fail(failed);
}

void Generation::record_host_events() {
    sim_->record_host_events();
    keep_msgs_ = true;
}

std::span<const TruthMsg> Generation::msgs() const {
    if (!kept_msgs_.empty()) return {kept_msgs_.data(), kept_msgs_.size()};
    return {truth_->msgs().data(), truth_->msgs().size()};
}

bool Generation::write_truth(const std::string& path, std::string& error) const {
    return write_truth_json(scenario_, *truth_, {scenario_.name, seed_}, path, error);
}

}  // namespace insert::gen

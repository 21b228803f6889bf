#include "bench/gen/generator.hpp"

#include <cstdio>

#include "bench/gen/frame_encoder.hpp"
#include "bench/gen/pcap_out.hpp"
#include "bench/gen/truth_json.hpp"

namespace insert::gen {

namespace {

// Fans each observed packet out to the truth observer and the frame encoder.
class Tee : public ObservedSink {
  public:
    Tee(TruthObserver& truth, FrameEncoder& encoder, PcapOut* pcap,
        const std::function<void(const SimPacket&, std::span<const uint8_t>)>& on_frame)
        : truth_(truth), encoder_(encoder), pcap_(pcap), on_frame_(on_frame) {}

    void observe(const SimPacket& p) override {
        truth_.observe(p);
        if (!pcap_ && !on_frame_) return;
        // Straight into the pcap buffer when there is a pcap.
        uint8_t* const out = pcap_ ? pcap_->frame_buffer(kMaxFrameBytes) : nullptr;
        const std::span<const uint8_t> frame =
            out ? std::span<const uint8_t>(out, encoder_.encode_into(p, out)) : encoder_.encode(p);
        if (frame.empty()) {
            ++encode_failures_;
            return;
        }
        if (pcap_) pcap_->commit(p.t_ns, frame.size());
        if (on_frame_) on_frame_(p, frame);
        ++frames_;
    }
    void prefetch(const SimPacket& p) override { truth_.prefetch(p); }
    void prefetch_conn(uint32_t conn) override { truth_.prefetch_conn(conn); }
    uint64_t frames() const { return frames_; }
    uint64_t encode_failures() const { return encode_failures_; }

  private:
    TruthObserver& truth_;
    FrameEncoder& encoder_;
    PcapOut* pcap_;
    const std::function<void(const SimPacket&, std::span<const uint8_t>)>& on_frame_;
    uint64_t frames_ = 0;
    uint64_t encode_failures_ = 0;
};

}  // namespace

Generation::Generation(Scenario scenario, uint64_t seed)
    : scenario_(std::move(scenario)), seed_(seed) {
    sim_ = std::make_unique<Simulator>(scenario_, seed_);
    truth_ = std::make_unique<TruthObserver>(scenario_, *sim_);
}

bool Generation::run(
    const std::string& pcap_path, std::string& error,
    const std::function<void(const SimPacket&, std::span<const uint8_t>)>& on_frame) {
    PcapOut writer;
    PcapOut* pcap = nullptr;
    if (!pcap_path.empty()) {
        if (!writer.open(pcap_path, 65535)) {
            error = writer.error();
            return false;
        }
        pcap = &writer;
    }
    FrameEncoder encoder(scenario_, *sim_);
    Tee tee(*truth_, encoder, pcap, on_frame);
    sim_->run(tee);
    truth_->finish();
    frames_ = tee.frames();
    if (tee.encode_failures() > 0) {
        error = "internal error: " + std::to_string(tee.encode_failures()) +
                " packets could not be encoded";
        if (pcap) writer.close(), std::remove(pcap_path.c_str());
        return false;
    }
    if (pcap && !writer.close()) {
        error = writer.error();
        std::remove(pcap_path.c_str());
        return false;
    }
    return true;
}

bool Generation::write_truth(const std::string& path, std::string& error) const {
    return write_truth_json(scenario_, *truth_, {scenario_.name, seed_}, path, error);
}

}  // namespace insert::gen

#include "dataplane/capture/pcap_writer.hpp"

#include <cerrno>
#include <cstring>

namespace insert::capture {

namespace {
constexpr std::size_t kBufferBytes = 1 << 20;
constexpr uint32_t kPcapMagicNs = 0xA1B23C4D;

void put32(std::vector<uint8_t>& b, uint32_t v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    b.insert(b.end(), p, p + 4);
}
}  // namespace

PcapWriter::~PcapWriter() {
    close();
}

bool PcapWriter::open(const std::string& path, uint32_t snaplen) {
    path_ = path;
    file_ = std::fopen(path.c_str(), "wb");
    if (!file_) {
        error_ = path + ": " + std::strerror(errno);
        return false;
    }
    buf_.reserve(kBufferBytes + 65536);
    put32(buf_, kPcapMagicNs);
    buf_.push_back(2), buf_.push_back(0);  // version 2.4
    buf_.push_back(4), buf_.push_back(0);
    put32(buf_, 0);  // thiszone
    put32(buf_, 0);  // sigfigs
    put32(buf_, snaplen);
    put32(buf_, 1);  // LINKTYPE_ETHERNET
    return true;
}

void PcapWriter::write(uint64_t ts_ns, std::span<const uint8_t> frame) {
    put32(buf_, static_cast<uint32_t>(ts_ns / 1'000'000'000ull));
    put32(buf_, static_cast<uint32_t>(ts_ns % 1'000'000'000ull));
    put32(buf_, static_cast<uint32_t>(frame.size()));
    put32(buf_, static_cast<uint32_t>(frame.size()));
    buf_.insert(buf_.end(), frame.begin(), frame.end());
    ++frames_;
    if (buf_.size() >= kBufferBytes) flush();
}

void PcapWriter::flush() {
    if (!file_ || buf_.empty()) return;
    if (std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size() && !failed_) {
        failed_ = true;
        error_ = path_ + ": write failed: " + std::strerror(errno);
    }
    buf_.clear();
}

bool PcapWriter::close() {
    if (!file_) return !failed_;
    flush();
    if (std::fclose(file_) != 0 && !failed_) {
        failed_ = true;
        error_ = path_ + ": close failed: " + std::strerror(errno);
    }
    file_ = nullptr;
    return !failed_;
}

}  // namespace insert::capture

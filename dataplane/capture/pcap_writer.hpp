// Buffered writer of nanosecond pcap files (Ethernet), for the synthesizer and tests.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

namespace insert::capture {

class PcapWriter {
  public:
    PcapWriter() = default;
    ~PcapWriter();
    PcapWriter(const PcapWriter&) = delete;
    PcapWriter& operator=(const PcapWriter&) = delete;

    // Creates/truncates the file and writes the header; false with error() on failure.
    bool open(const std::string& path, uint32_t snaplen = 65535);
    void write(uint64_t ts_ns, std::span<const uint8_t> frame);
    // Flushes and closes; false if any write failed (disk full...).
    bool close();
    const std::string& error() const { return error_; }
    uint64_t frames() const { return frames_; }

  private:
    void flush();
    std::FILE* file_ = nullptr;
    std::vector<uint8_t> buf_;
    std::string path_;
    std::string error_;
    uint64_t frames_ = 0;
    bool failed_ = false;
};

}  // namespace insert::capture

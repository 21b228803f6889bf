// Serialises frames into pcap (micro/nanosecond, either byte order) and pcapng (any
// if_tsresol, either byte order) images. Used by the capture-reader tests and by
// make_sample_pcaps, which needs formats the production PcapWriter (ns pcap only) does not
// write. Written from the file-format documents (pcap: draft-ietf-opsawg-pcap; pcapng:
// draft-ietf-opsawg-pcapng), independently of the reader it tests.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

namespace insert::testing {

struct CapturedFrame {
    uint64_t ts_ns = 0;
    std::vector<uint8_t> bytes;
    uint32_t orig_len = 0;  // 0: the captured length
};

class ByteSink {
  public:
    explicit ByteSink(bool big_endian) : big_endian_(big_endian) {}
    void u8(uint8_t v) { out_.push_back(v); }
    void u16(uint16_t v) {
        if (big_endian_) {
            u8(static_cast<uint8_t>(v >> 8));
            u8(static_cast<uint8_t>(v));
        } else {
            u8(static_cast<uint8_t>(v));
            u8(static_cast<uint8_t>(v >> 8));
        }
    }
    void u32(uint32_t v) {
        if (big_endian_) {
            u16(static_cast<uint16_t>(v >> 16));
            u16(static_cast<uint16_t>(v));
        } else {
            u16(static_cast<uint16_t>(v));
            u16(static_cast<uint16_t>(v >> 16));
        }
    }
    void bytes(std::span<const uint8_t> b) { out_.insert(out_.end(), b.begin(), b.end()); }
    void pad4() {
        while (out_.size() % 4) out_.push_back(0);
    }
    std::size_t size() const { return out_.size(); }
    // Overwrites a 32-bit value already written at `at` (block lengths known afterwards).
    void patch32(std::size_t at, uint32_t v) {
        ByteSink tmp(big_endian_);
        tmp.u32(v);
        for (int i = 0; i < 4; ++i) out_[at + i] = tmp.out_[i];
    }
    std::vector<uint8_t>& data() { return out_; }

  private:
    bool big_endian_;
    std::vector<uint8_t> out_;
};

struct PcapOptions {
    bool nanosecond = true;
    bool big_endian = false;
    uint32_t link_type = 1;  // LINKTYPE_ETHERNET
    uint32_t snaplen = 65535;
};

inline std::vector<uint8_t> pcap_image(const std::vector<CapturedFrame>& frames,
                                       const PcapOptions& o = {}) {
    ByteSink s(o.big_endian);
    s.u32(o.nanosecond ? 0xA1B23C4D : 0xA1B2C3D4);
    s.u16(2);
    s.u16(4);
    s.u32(0);
    s.u32(0);
    s.u32(o.snaplen);
    s.u32(o.link_type);
    for (const CapturedFrame& f : frames) {
        const uint64_t sub =
            o.nanosecond ? f.ts_ns % 1'000'000'000 : f.ts_ns % 1'000'000'000 / 1000;
        s.u32(static_cast<uint32_t>(f.ts_ns / 1'000'000'000));
        s.u32(static_cast<uint32_t>(sub));
        s.u32(static_cast<uint32_t>(f.bytes.size()));
        s.u32(f.orig_len ? f.orig_len : static_cast<uint32_t>(f.bytes.size()));
        s.bytes(f.bytes);
    }
    return std::move(s.data());
}

struct PcapngOptions {
    bool big_endian = false;
    uint16_t link_type = 1;
    // if_tsresol option byte: 6 = microseconds (also the default when absent), 9 = ns,
    // 0x80 | n = 2^-n seconds. has_tsresol = false omits the option.
    bool has_tsresol = true;
    uint8_t tsresol = 9;
    bool simple_blocks = false;  // SPB instead of EPB (no timestamps)
    uint32_t snaplen = 262144;
};

inline std::vector<uint8_t> pcapng_image(const std::vector<CapturedFrame>& frames,
                                         const PcapngOptions& o = {}) {
    ByteSink s(o.big_endian);
    // Section Header Block.
    s.u32(0x0A0D0D0A);
    s.u32(28);
    s.u32(0x1A2B3C4D);
    s.u16(1);
    s.u16(0);
    s.u32(0xFFFFFFFF);  // section length unknown (-1)
    s.u32(0xFFFFFFFF);
    s.u32(28);
    // Interface Description Block.
    const std::size_t idb = s.size();
    s.u32(1);
    s.u32(0);
    s.u16(o.link_type);
    s.u16(0);
    s.u32(o.snaplen);
    if (o.has_tsresol) {
        s.u16(9);
        s.u16(1);
        s.u8(o.tsresol);
        s.pad4();
        s.u16(0);  // opt_endofopt
        s.u16(0);
    }
    s.u32(static_cast<uint32_t>(s.size() - idb + 4));
    s.patch32(idb + 4, static_cast<uint32_t>(s.size() - idb));
    uint64_t ticks_per_sec = 1'000'000;
    if (o.has_tsresol) {
        ticks_per_sec = 1;
        for (int i = 0; i < (o.tsresol & 0x7F); ++i) ticks_per_sec *= (o.tsresol & 0x80) ? 2 : 10;
    }
    for (const CapturedFrame& f : frames) {
        const std::size_t start = s.size();
        const uint32_t orig = f.orig_len ? f.orig_len : static_cast<uint32_t>(f.bytes.size());
        if (o.simple_blocks) {
            s.u32(3);
            s.u32(0);
            s.u32(orig);
        } else {
            const auto ticks = static_cast<uint64_t>(static_cast<unsigned __int128>(f.ts_ns) *
                                                     ticks_per_sec / 1'000'000'000u);
            s.u32(6);
            s.u32(0);
            s.u32(0);  // interface 0
            s.u32(static_cast<uint32_t>(ticks >> 32));
            s.u32(static_cast<uint32_t>(ticks));
            s.u32(static_cast<uint32_t>(f.bytes.size()));
            s.u32(orig);
        }
        s.bytes(f.bytes);
        s.pad4();
        s.u32(static_cast<uint32_t>(s.size() - start + 4));
        s.patch32(start + 4, static_cast<uint32_t>(s.size() - start));
    }
    return std::move(s.data());
}

inline bool write_file(const std::string& path, std::span<const uint8_t> bytes) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return false;
    const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    return std::fclose(f) == 0 && ok;
}

}  // namespace insert::testing

// Memory-mapped reader of pcap (micro- and nanosecond, either byte order) and pcapng
// captures with Ethernet link type. Hand-written rather than libpcap because the replay
// target (>= 50x tshark) needs frames handed out as spans into the mapping, with no copy
// and no per-packet call into a library; libpcap's pcap_next_ex measured 4.7 Mpps here.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace insert::capture {

struct Frame {
    uint64_t index = 0;  // 1-based position in the file
    uint64_t ts_ns = 0;  // capture timestamp, ns since the epoch
    uint32_t orig_len = 0;
    std::span<const uint8_t> data;  // captured bytes (may be shorter than orig_len)
};

enum class Format : uint8_t { pcap, pcapng };

// Maps the first `max_bytes` of a mapping into the process now (MADV_POPULATE_READ), so
// that a walk over them takes no page faults: a replay runs it on a spare thread while EAL
// starts (EAL spends ~100 ms measuring the TSC on CPUs that do not report its frequency)
// and the reader's start. Bounded, so that a capture larger than memory is not read in
// whole ahead of the walk. Best effort: without kernel support (Linux < 5.14) pages fault
// in as they are read.
void populate(std::span<const uint8_t> mapping, std::size_t max_bytes);

class CaptureFile {
  public:
    CaptureFile() = default;
    ~CaptureFile();
    CaptureFile(const CaptureFile&) = delete;
    CaptureFile& operator=(const CaptureFile&) = delete;
    CaptureFile(CaptureFile&& other) noexcept;
    CaptureFile& operator=(CaptureFile&& other) noexcept;

    // Maps the file and checks its header; "-" is standard input, read to its end first
    // (stdin_capture.hpp) and named "stdin" in errors. On failure returns false and sets error() to
    // one line naming the file and the problem (missing, not a capture, link type...). Only
    // regular files: a FIFO or device is refused at once, without waiting for a writer.
    // The mapping is guarded (mapping_guard.hpp): if the file shrinks while it is read, the
    // walk stops with an error instead of the process dying of SIGBUS.
    bool open(const std::string& path);
    const std::string& error() const { return error_; }
    // True when error() is the file ending inside a record or block (a capture cut short,
    // e.g. still being written): the frames before it are complete and valid. False for
    // every other error (corrupt block, non-Ethernet interface, the file shrank...).
    bool truncated() const { return truncated_; }
    // The file became shorter than when it was opened (some frames read may be zeros).
    bool shrunk() const { return shrunk_ && shrunk_->load(std::memory_order_acquire); }

    // Next frame in file order; false at the end. A record cut short by the end of the
    // file or a non-Ethernet interface in a pcapng stops the walk and sets error()
    // (check it after the loop: the frames before it are valid).
    bool next(Frame& frame);
    void rewind();

    // The mapped file, for populate().
    std::span<const uint8_t> mapping() const { return {base_, size_}; }

    Format format() const { return format_; }
    std::size_t size_bytes() const { return size_; }
    std::size_t position() const { return pos_; }  // bytes consumed, for progress lines

  private:
    bool next_pcap(Frame& frame);
    bool next_pcapng(Frame& frame);
    bool fail(const std::string& what);
    bool fail_truncated(const std::string& what);
    bool fail_shrunk();
    void unmap();
    void read_ahead();
    uint16_t rd16(const uint8_t* p) const;
    uint32_t rd32(const uint8_t* p) const;

    std::string path_;
    std::string error_;
    bool truncated_ = false;
    const uint8_t* base_ = nullptr;
    std::size_t size_ = 0;
    std::size_t pos_ = 0;
    std::size_t prefetched_ = 0;  // read_ahead() has requested the lines before this offset
    std::size_t first_record_ = 0;
    Format format_ = Format::pcap;
    bool swapped_ = false;
    uint64_t ns_per_tick_ = 1000;  // pcap: 1000 (us) or 1 (ns)
    uint64_t index_ = 0;
    // pcapng interfaces: per interface id, ticks per second and link type.
    static constexpr std::size_t kMaxInterfaces = 64;
    uint64_t if_ticks_per_sec_[kMaxInterfaces] = {};
    uint16_t if_link_type_[kMaxInterfaces] = {};
    uint32_t if_snaplen_[kMaxInterfaces] = {};  // 0: no limit
    std::size_t if_count_ = 0;
    // Raised by the SIGBUS guard; on the heap so that it stays put when the file is moved.
    std::unique_ptr<std::atomic<bool>> shrunk_;
};

constexpr uint16_t kLinkTypeEthernet = 1;

}  // namespace insert::capture

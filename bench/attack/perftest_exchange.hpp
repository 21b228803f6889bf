// The client side of perftest's out-of-band TCP exchange (no RDMA-CM), enough to connect to
// an unmodified perftest bandwidth server (ib_write_bw, ib_read_bw, ...) as its client.
//
// The exchange, as Debian 12's perftest (package 4.5-0.17, which announces version "6.06")
// performs it for a one-QP bandwidth test - read from a capture between two perftest
// processes and from perftest's perftest_communication.c/write_bw.c (linux-rdma/perftest).
// Every step is symmetric: the client writes its item, then reads the server's, of the
// same fixed size:
//   1. version text, 16 bytes, NUL padded ("6.06");
//   2. cycle buffer size and cache line size, a 32-bit big-endian integer each;
//   3. active MTU as decimal text in 2 bytes ("5\0" = IBV_MTU_4096);
//   4. three "key" records of 108 bytes before the data phase: the QP record (below),
//      then two synchronisations (the server's QP is in RTR/RTS after the second);
//   5. (data phase: the client moves its data; the server waits in its next read)
//   6. one key record: the client has finished;
//   7. bandwidth report: size, iterations, peak, average, message rate (8 bytes each);
//   8. one key record (close), then "done\0" (5 bytes).
// A key record is text: "%04x:%04x:%06x:%06x:%08x:%016llx:" LID, outstanding reads, QPN,
// PSN, rkey, VA, then the 16 GID bytes as "%02x:" each, then "%08x:" SRQ number, NUL.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>

namespace insert::attack {

// A QP as perftest describes it to its peer.
struct PerftestDest {
    uint32_t lid = 0;
    uint32_t out_reads = 1;
    uint32_t qpn = 0;
    uint32_t psn = 0;
    uint32_t rkey = 0;
    uint64_t vaddr = 0;
    std::array<uint8_t, 16> gid{};
    uint32_t srqn = 0;
};

constexpr std::size_t kKeyRecordSize = 108;

// Formats `d` as a key record (exactly kKeyRecordSize bytes, NUL terminated and padded).
std::array<char, kKeyRecordSize> format_key_record(const PerftestDest& d);
// Parses a key record; false if it is not one.
bool parse_key_record(const std::array<char, kKeyRecordSize>& rec, PerftestDest& d);

class PerftestClient {
  public:
    ~PerftestClient();
    // Connects to the server's TCP port, retrying until `limit` (the server may not listen
    // yet). Returns false with error() set.
    bool connect(const std::string& server_ip, uint16_t port, std::chrono::milliseconds limit);
    // Steps 1-3. `version` is what this client announces (it decides the report format).
    bool setup(const std::string& version, int mtu_code);
    // One key-record exchange: sends `mine`, returns the server's in `theirs`.
    bool hand_shake(const PerftestDest& mine, PerftestDest& theirs);
    // Steps 6-8 with a report of `size` bytes x `iters` and zero bandwidth.
    bool finish(const PerftestDest& mine, uint64_t size, uint64_t iters);
    const std::string& error() const { return error_; }

  private:
    bool exchange(const void* mine, void* theirs, std::size_t n, const char* what);
    bool fail(const std::string& what);
    int fd_ = -1;
    std::string error_;
};

}  // namespace insert::attack

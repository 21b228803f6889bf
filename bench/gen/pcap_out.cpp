#include "bench/gen/pcap_out.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace insert::gen {

namespace {

constexpr uint32_t kPcapMagicNs = 0xA1B23C4D;  // nanosecond timestamps
constexpr uint32_t kLinkTypeEthernet = 1;

// pcap fields are in the writer's byte order (readers detect it from the magic).
uint8_t* put32(uint8_t* p, uint32_t v) {
    std::memcpy(p, &v, 4);
    return p + 4;
}

}  // namespace

PcapOut::~PcapOut() {
    close();
}

bool PcapOut::open(const std::string& path, uint32_t snaplen) {
    path_ = path;
    fd_ = file_.open(path, 0644);
    if (fd_ < 0) {
        error_ = path + ": " + std::strerror(errno);
        return false;
    }
    buf_ = std::make_unique_for_overwrite<uint8_t[]>(kBufferBytes);
    uint8_t* p = put32(buf_.get(), kPcapMagicNs);
    const uint16_t version[2] = {2, 4};
    std::memcpy(p, version, 4);
    p = put32(p + 4, 0);  // thiszone
    p = put32(p, 0);      // sigfigs
    p = put32(p, snaplen);
    p = put32(p, kLinkTypeEthernet);
    used_ = static_cast<std::size_t>(p - buf_.get());
    return true;
}

void PcapOut::commit(uint64_t ts_ns, std::size_t len) {
    uint8_t* p = buf_.get() + used_;
    p = put32(p, static_cast<uint32_t>(ts_ns / 1'000'000'000ull));
    p = put32(p, static_cast<uint32_t>(ts_ns % 1'000'000'000ull));
    p = put32(p, static_cast<uint32_t>(len));
    put32(p, static_cast<uint32_t>(len));
    used_ += kRecordHeader + len;
}

void PcapOut::flush(bool all) {
    const std::size_t n = all ? used_ : used_ / OutputFile::kPage * OutputFile::kPage;
    const uint8_t* p = buf_.get();
    std::size_t left = n;
    written_ += n;
    file_.ahead(written_);
    while (left > 0 && error_.empty()) {
        const ssize_t w = ::write(fd_, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            error_ = path_ + ": write failed: " + std::strerror(w < 0 ? errno : ENOSPC);
            break;
        }
        p += w;
        left -= static_cast<std::size_t>(w);
    }
    std::memmove(buf_.get(), buf_.get() + n, used_ - n);  // less than a page
    used_ -= n;
}

bool PcapOut::close() {
    if (fd_ < 0) return error_.empty();
    flush(true);
    if (error_.empty() && !file_.finish(written_)) error_ = path_ + ": " + std::strerror(errno);
    if (::close(fd_) != 0 && error_.empty())
        error_ = path_ + ": close failed: " + std::strerror(errno);
    fd_ = -1;
    return error_.empty();
}

}  // namespace insert::gen

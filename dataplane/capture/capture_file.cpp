#include "dataplane/capture/capture_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>

#include <cerrno>
#include <cstring>
#include <utility>

#include "dataplane/capture/mapping_guard.hpp"
#include "dataplane/capture/stdin_capture.hpp"

namespace insert::capture {

namespace {

constexpr uint32_t kPcapMagicUs = 0xA1B2C3D4;
constexpr uint32_t kPcapMagicNs = 0xA1B23C4D;
constexpr uint32_t kPcapngShb = 0x0A0D0D0A;
constexpr uint32_t kPcapngByteOrder = 0x1A2B3C4D;
constexpr uint32_t kPcapngIdb = 1, kPcapngOpb = 2, kPcapngSpb = 3, kPcapngEpb = 6;
constexpr std::size_t kPcapFileHeaderLen = 24;
constexpr std::size_t kPcapRecordHeaderLen = 16;
constexpr uint16_t kIfTsresolOption = 9;

uint32_t raw32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

}  // namespace

CaptureFile::~CaptureFile() {
    unmap();
}

void CaptureFile::unmap() {
    if (!base_) return;
    unguard_mapping(base_);
    munmap(const_cast<uint8_t*>(base_), size_);
    base_ = nullptr;
}

CaptureFile::CaptureFile(CaptureFile&& o) noexcept {
    *this = std::move(o);
}

CaptureFile& CaptureFile::operator=(CaptureFile&& o) noexcept {
    if (this == &o) return *this;
    unmap();
    path_ = std::move(o.path_);
    error_ = std::move(o.error_);
    truncated_ = o.truncated_;
    base_ = std::exchange(o.base_, nullptr);
    size_ = std::exchange(o.size_, 0);
    pos_ = o.pos_;
    first_record_ = o.first_record_;
    format_ = o.format_;
    swapped_ = o.swapped_;
    ns_per_tick_ = o.ns_per_tick_;
    index_ = o.index_;
    std::memcpy(if_ticks_per_sec_, o.if_ticks_per_sec_, sizeof(if_ticks_per_sec_));
    std::memcpy(if_link_type_, o.if_link_type_, sizeof(if_link_type_));
    std::memcpy(if_snaplen_, o.if_snaplen_, sizeof(if_snaplen_));
    if_count_ = o.if_count_;
    shrunk_ = std::move(o.shrunk_);
    return *this;
}

bool CaptureFile::fail(const std::string& what) {
    error_ = path_ + ": " + what;
    return false;
}

bool CaptureFile::fail_truncated(const std::string& what) {
    truncated_ = true;
    return fail(what);
}

bool CaptureFile::fail_shrunk() {
    struct stat st {};
    const std::string now = path_ != "stdin" && ::stat(path_.c_str(), &st) == 0
                                ? std::to_string(st.st_size) + " bytes"
                                : "gone";
    return fail("the file shrank while being read (" + std::to_string(size_) + " bytes when " +
                "opened, now " + now + "): was it overwritten?");
}

uint16_t CaptureFile::rd16(const uint8_t* p) const {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return swapped_ ? __builtin_bswap16(v) : v;
}

uint32_t CaptureFile::rd32(const uint8_t* p) const {
    const uint32_t v = raw32(p);
    return swapped_ ? __builtin_bswap32(v) : v;
}

bool CaptureFile::open(const std::string& path) {
    unmap();
    const bool from_stdin = path == "-";
    path_ = from_stdin ? "stdin" : path;
    error_.clear();
    truncated_ = false;
    std::string stdin_error;
    // Non-blocking: opening a FIFO for reading would otherwise wait for a writer forever.
    const int fd = from_stdin ? stdin_capture_fd(stdin_error)
                              : ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return fail(from_stdin ? stdin_error : std::strerror(errno));
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return fail("not a regular file");
    }
    size_ = static_cast<std::size_t>(st.st_size);
    if (size_ < kPcapFileHeaderLen) {
        ::close(fd);
        return fail("not a pcap or pcapng capture (too short)");
    }
    void* m = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (m == MAP_FAILED) return fail(std::string("cannot map: ") + std::strerror(errno));
    // Sequential: the kernel reads ahead aggressively and drops pages behind us. Not
    // MADV_WILLNEED: it walks the whole file's page cache before returning (160 ms for a
    // 392 MB capture already in cache, a tenth of its replay), where read-ahead during the
    // walk costs nothing extra.
    madvise(m, size_, MADV_SEQUENTIAL);
    base_ = static_cast<const uint8_t*>(m);
    shrunk_ = std::make_unique<std::atomic<bool>>(false);
    guard_mapping(base_, size_, shrunk_.get());

    const uint32_t magic = raw32(base_);
    if (magic == kPcapMagicUs || magic == kPcapMagicNs ||
        magic == __builtin_bswap32(kPcapMagicUs) || magic == __builtin_bswap32(kPcapMagicNs)) {
        format_ = Format::pcap;
        swapped_ =
            magic == __builtin_bswap32(kPcapMagicUs) || magic == __builtin_bswap32(kPcapMagicNs);
        ns_per_tick_ = (rd32(base_) == kPcapMagicNs) ? 1 : 1000;
        // Low 16 bits: link type; the high bits carry FCS length and the P flag
        // (draft-ietf-opsawg-pcap), which only say that frames end with an FCS.
        const uint32_t link = rd32(base_ + 20) & 0xFFFF;
        if (link != kLinkTypeEthernet)
            return fail("link type " + std::to_string(link) + " is not Ethernet (1)");
        first_record_ = kPcapFileHeaderLen;
    } else if (magic == kPcapngShb) {
        format_ = Format::pcapng;
        const uint32_t bom = raw32(base_ + 8);
        if (bom != kPcapngByteOrder && bom != __builtin_bswap32(kPcapngByteOrder))
            return fail("not a pcapng capture (bad byte-order magic)");
        swapped_ = bom != kPcapngByteOrder;
        first_record_ = 0;
    } else {
        return fail("not a pcap or pcapng capture");
    }
    rewind();
    return true;
}

void CaptureFile::rewind() {
    pos_ = first_record_;
    prefetched_ = pos_;
    index_ = 0;
    if_count_ = 0;
}

// The mapping is read front to back, but page-cache pages are not physically contiguous,
// so the hardware prefetcher stops at every 4 KiB page and each record header was a cache
// miss (the largest item of the replay reader). Keep the next few KiB in flight.
void CaptureFile::read_ahead() {
    constexpr std::size_t kReadAhead = 4096, kLine = 64;
    const std::size_t want = std::min(size_, pos_ + kReadAhead);
    for (; prefetched_ < want; prefetched_ += kLine) __builtin_prefetch(base_ + prefetched_);
}

void populate(std::span<const uint8_t> mapping, std::size_t max_bytes) {
#ifndef MADV_POPULATE_READ
    constexpr int MADV_POPULATE_READ = 22;  // Linux 5.14; older headers lack it
#endif
    if (mapping.empty()) return;
    madvise(const_cast<uint8_t*>(mapping.data()), std::min(mapping.size(), max_bytes),
            MADV_POPULATE_READ);
}

bool CaptureFile::next(Frame& frame) {
    if (!base_ || !error_.empty()) return false;
    if (shrunk()) [[unlikely]]
        return fail_shrunk();
    read_ahead();
    return format_ == Format::pcap ? next_pcap(frame) : next_pcapng(frame);
}

bool CaptureFile::next_pcap(Frame& frame) {
    if (pos_ == size_) return false;
    if (size_ - pos_ < kPcapRecordHeaderLen)
        return fail_truncated("truncated record header at byte " + std::to_string(pos_));
    const uint8_t* h = base_ + pos_;
    const uint32_t incl = rd32(h + 8);
    if (incl > size_ - pos_ - kPcapRecordHeaderLen)
        return fail_truncated("truncated record at byte " + std::to_string(pos_));
    frame.index = ++index_;
    frame.ts_ns = uint64_t{rd32(h)} * 1'000'000'000ull + uint64_t{rd32(h + 4)} * ns_per_tick_;
    frame.orig_len = rd32(h + 12);
    frame.data = {h + kPcapRecordHeaderLen, incl};
    pos_ += kPcapRecordHeaderLen + incl;
    return true;
}

bool CaptureFile::next_pcapng(Frame& frame) {
    while (pos_ < size_) {
        if (size_ - pos_ < 12)
            return fail_truncated("truncated block at byte " + std::to_string(pos_));
        const uint8_t* b = base_ + pos_;
        uint32_t type = raw32(b);
        if (type == kPcapngShb) {
            // A new section may switch byte order and restarts interface numbering.
            const uint32_t bom = raw32(b + 8);
            if (bom != kPcapngByteOrder && bom != __builtin_bswap32(kPcapngByteOrder))
                return fail("bad section header at byte " + std::to_string(pos_));
            swapped_ = bom != kPcapngByteOrder;
            if_count_ = 0;
        } else {
            type = rd32(b);
        }
        const uint32_t len = rd32(b + 4);
        if (len < 12 || len % 4 != 0)
            return fail("corrupt block length at byte " + std::to_string(pos_));
        if (len > size_ - pos_)
            return fail_truncated("truncated block at byte " + std::to_string(pos_));
        const uint8_t* body = b + 8;
        const std::size_t body_len = len - 12;
        pos_ += len;

        if (type == kPcapngIdb) {
            if (body_len < 8) return fail("corrupt interface block");
            if (if_count_ == kMaxInterfaces) return fail("more than 64 interfaces");
            uint64_t ticks = 1'000'000;  // default resolution: microseconds
            for (std::size_t o = 8; o + 4 <= body_len;) {
                const uint16_t code = rd16(body + o);
                const uint16_t olen = rd16(body + o + 2);
                if (code == 0 || o + 4 + olen > body_len) break;
                if (code == kIfTsresolOption && olen >= 1) {
                    const uint8_t r = body[o + 4];
                    const unsigned exp = r & 0x7F;
                    ticks = 1;
                    for (unsigned i = 0; i < exp && ticks < (1ull << 62); ++i)
                        ticks *= (r & 0x80) ? 2 : 10;
                }
                o += 4 + ((olen + 3u) & ~3u);
            }
            if_ticks_per_sec_[if_count_] = ticks ? ticks : 1;
            if_link_type_[if_count_] = rd16(body);
            if_snaplen_[if_count_] = rd32(body + 4);
            ++if_count_;
            continue;
        }
        if (type != kPcapngEpb && type != kPcapngSpb && type != kPcapngOpb) continue;

        uint32_t iface = 0, caplen = 0, origlen = 0;
        uint64_t ticks = 0;
        const uint8_t* data = nullptr;
        if (type == kPcapngSpb) {
            if (body_len < 4) return fail("corrupt simple packet block");
            // An SPB has no captured length: it is min(original length, interface snap
            // length), and the block's own length includes up to 3 padding bytes.
            origlen = rd32(body);
            std::size_t cap = std::min<std::size_t>(origlen, body_len - 4);
            if (if_count_ > 0 && if_snaplen_[0] != 0)
                cap = std::min<std::size_t>(cap, if_snaplen_[0]);
            caplen = static_cast<uint32_t>(cap);
            data = body + 4;
        } else {
            if (body_len < 20) return fail("corrupt packet block");
            iface = (type == kPcapngOpb) ? rd16(body) : rd32(body);
            ticks = (uint64_t{rd32(body + 4)} << 32) | rd32(body + 8);
            caplen = rd32(body + 12);
            origlen = rd32(body + 16);
            data = body + 20;
            if (caplen > body_len - 20) return fail("corrupt packet block (length)");
        }
        if (iface >= if_count_) return fail("packet for an undeclared interface");
        if (if_link_type_[iface] != kLinkTypeEthernet)
            return fail("interface " + std::to_string(iface) + " has link type " +
                        std::to_string(if_link_type_[iface]) + ", not Ethernet (1)");
        const uint64_t tps = if_ticks_per_sec_[iface];
        frame.index = ++index_;
        // 128-bit product: with a resolution finer than 1 ns (e.g. ps) the remainder
        // times 10^9 overflows 64 bits.
        frame.ts_ns = (ticks / tps) * 1'000'000'000ull +
                      static_cast<uint64_t>(static_cast<unsigned __int128>(ticks % tps) *
                                            1'000'000'000ull / tps);
        frame.orig_len = origlen;
        frame.data = {data, caplen};
        return true;
    }
    return false;
}

}  // namespace insert::capture

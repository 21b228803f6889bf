#include "correlator/run/stream_source.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "correlator/input/ingest.hpp"

namespace insert::correlate {

namespace {

constexpr std::size_t kReadBytes = 1 << 20;  // the first buffer: one read

}  // namespace

StreamSource::StreamSource(std::string name, int fd, std::size_t max_line, pid_t peer)
    : name_(std::move(name)), fd_(fd), peer_(peer), max_line_(std::max<std::size_t>(max_line, 1)) {
    capacity_ = kReadBytes;
    buffer_.reset(new char[capacity_ + simdjson::SIMDJSON_PADDING]);
}

void StreamSource::close() {
    if (fd_ > 0) ::close(fd_);
    fd_ = -1;
    buffer_.reset();  // a run with many connections coming and going keeps no buffer of theirs
    capacity_ = size_ = line_start_ = 0;
}

bool StreamSource::scan(std::size_t from) {
    const char* const base = buffer_.get();
    const char* p = base + from;
    const char* const end = base + size_;
    while (const char* nl = static_cast<const char*>(std::memchr(p, '\n', end - p))) {
        if (static_cast<std::size_t>(nl - base) - line_start_ > max_line_) return false;
        line_start_ = static_cast<std::size_t>(nl - base) + 1;
        p = nl + 1;
    }
    return size_ - line_start_ <= max_line_;
}

void StreamSource::hand_on(const Deliver& deliver, bool ended) {
    const std::size_t whole = ended ? size_ : line_start_;
    if (whole > 0) deliver(buffer_.get(), whole, ended && buffer_[whole - 1] != '\n');
    std::memmove(buffer_.get(), buffer_.get() + whole, size_ - whole);
    size_ -= whole;
    line_start_ = 0;
}

StreamSource::Read StreamSource::read(const Deliver& deliver) {
    if (fd_ < 0) return Read::ended;
    bool ended = false;
    while (true) {
        if (size_ == capacity_) {
            if (line_start_ > 0) {  // room: the whole lines go first
                hand_on(deliver, false);
                continue;
            }
            // One line fills the buffer, and it is not over the limit yet (scan): room
            // for it up to the limit and its newline.
            const std::size_t bigger = std::min(capacity_ * 2, max_line_ + 1);
            auto grown = std::make_unique<char[]>(bigger + simdjson::SIMDJSON_PADDING);
            std::memcpy(grown.get(), buffer_.get(), size_);
            buffer_ = std::move(grown);
            capacity_ = bigger;
        }
        const ssize_t n = ::read(fd_, buffer_.get() + size_, capacity_ - size_);
        if (n > 0) {
            const std::size_t from = size_;
            size_ += static_cast<std::size_t>(n);
            if (!scan(from)) {
                // The lines before the long one are handed on; it and the rest are not.
                size_ = line_start_;
                hand_on(deliver, false);
                close();
                return Read::too_long;
            }
            if (size_ < capacity_) break;  // drained for now
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        ended = true;  // 0, or an error: the stream is over
        break;
    }
    hand_on(deliver, ended);
    if (!ended) return Read::more;
    close();
    return Read::ended;
}

}  // namespace insert::correlate

#include "dataplane/tools/records_socket.hpp"

#include <cerrno>
#include <cstring>

namespace insert::tools {

namespace {

ssize_t write_records(void* cookie, const char* data, std::size_t size) {
    static_cast<UnixLineSender*>(cookie)->write(std::string_view(data, size));
    return static_cast<ssize_t>(size);  // what the sender cannot send it keeps or counts
}

}  // namespace

std::string records_socket_path(const std::string& records) {
    return records.rfind("unix:", 0) == 0 ? records.substr(5) : std::string();
}

RecordsSocket::RecordsSocket(const std::string& path, const std::string& label,
                             std::size_t buffer_bytes)
    : sender_(path, label, buffer_bytes) {}

RecordsSocket::~RecordsSocket() {
    if (file_) std::fclose(file_);
}

bool RecordsSocket::open(std::string& error) {
    cookie_io_functions_t io{};
    io.write = write_records;
    file_ = ::fopencookie(&sender_, "w", io);
    if (!file_) {
        error = std::string("--records unix: ") + std::strerror(errno);
        return false;
    }
    std::setvbuf(file_, nullptr, _IONBF, 0);
    sender_.start();
    return true;
}

void RecordsSocket::finish(UnixLineSender::Clock::duration wait) {
    if (file_) std::fflush(file_);
    sender_.finish(wait);
}

}  // namespace insert::tools

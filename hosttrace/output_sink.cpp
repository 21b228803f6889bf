#include "hosttrace/output_sink.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace insert::hosttrace {

std::unique_ptr<OutputSink> OutputSink::open(const std::string& path,
                                             const std::string& unix_socket, std::string& error) {
    std::unique_ptr<OutputSink> sink(new OutputSink());
    if (!unix_socket.empty()) {
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        if (unix_socket.size() >= sizeof(addr.sun_path)) {
            error = "--unix " + unix_socket + ": path too long";
            return nullptr;
        }
        std::memcpy(addr.sun_path, unix_socket.c_str(), unix_socket.size() + 1);
        sink->socket_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (sink->socket_fd_ < 0 ||
            ::connect(sink->socket_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
            error = "--unix " + unix_socket + ": " + std::strerror(errno);
            return nullptr;
        }
        return sink;
    }
    if (path == "-") {
        sink->file_ = stdout;
        return sink;
    }
    sink->file_ = std::fopen(path.c_str(), "w");
    if (!sink->file_) {
        error = "--output " + path + ": " + std::strerror(errno);
        return nullptr;
    }
    sink->owns_file_ = true;
    return sink;
}

OutputSink::~OutputSink() {
    flush();
    if (owns_file_) std::fclose(file_);
    if (socket_fd_ >= 0) ::close(socket_fd_);
}

bool OutputSink::write(std::string_view lines) {
    if (failed_) return false;
    if (socket_fd_ >= 0) {
        pending_ += lines;
        return true;
    }
    if (std::fwrite(lines.data(), 1, lines.size(), file_) != lines.size()) failed_ = true;
    return !failed_;
}

bool OutputSink::flush() {
    if (failed_) return false;
    if (socket_fd_ >= 0) {
        size_t done = 0;
        while (done < pending_.size()) {
            const ssize_t n =
                ::send(socket_fd_, pending_.data() + done, pending_.size() - done, MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                failed_ = true;
                return false;
            }
            done += static_cast<size_t>(n);
        }
        pending_.clear();
        return true;
    }
    if (std::fflush(file_) != 0) failed_ = true;
    return !failed_;
}

}  // namespace insert::hosttrace

#include "dataplane/capture/stdin_capture.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace insert::capture {

namespace {

// Reads standard input to its end into a new memory file; its descriptor, or -1.
int spool_stdin(std::string& error) {
    if (::isatty(STDIN_FILENO) == 1) {
        error = "a terminal (pipe a capture into it, e.g. tcpdump -w - ... | insert-dp replay -)";
        return -1;
    }
    const int fd = ::memfd_create("insert-dp-stdin", MFD_CLOEXEC);
    if (fd < 0) {
        error = std::string("memfd_create: ") + std::strerror(errno);
        return -1;
    }
    std::vector<char> buffer(1 << 20);
    for (;;) {
        const ssize_t n = ::read(STDIN_FILENO, buffer.data(), buffer.size());
        if (n == 0) return fd;
        if (n < 0) {
            if (errno == EINTR) continue;
            error = std::string("read: ") + std::strerror(errno);
            break;
        }
        for (ssize_t done = 0; done < n;) {
            const ssize_t w = ::write(fd, buffer.data() + done, static_cast<std::size_t>(n - done));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                error = std::string("keeping it in memory: ") + std::strerror(errno);
                ::close(fd);
                return -1;
            }
            done += w;
        }
    }
    ::close(fd);
    return -1;
}

}  // namespace

int stdin_capture_fd(std::string& error) {
    // Once: replay and decode open their input twice (a check, then the walk).
    static std::string spool_error;
    static const int spooled = spool_stdin(spool_error);
    if (spooled < 0) {
        error = spool_error;
        return -1;
    }
    const int fd = ::fcntl(spooled, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) error = std::string("dup: ") + std::strerror(errno);
    return fd;
}

}  // namespace insert::capture

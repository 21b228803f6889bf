#include "correlator/run/listen_socket.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace insert::correlate {

namespace {

// Refusals go on: one line at the first, then at most one per period.
constexpr auto kLogPeriod = std::chrono::seconds(10);
// accept() failing for want of kernel memory (ENOBUFS, ENOMEM), or with no reserve
// descriptor left: the listener rests this long instead of being polled in a busy loop.
constexpr auto kRest = std::chrono::milliseconds(100);

bool socket_address(const std::string& path, sockaddr_un& addr, std::string& error) {
    addr = {};
    addr.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
        error = "--listen " + path + ": path too long for a Unix socket";
        return false;
    }
    std::memcpy(addr.sun_path, path.c_str(), path.size());
    return true;
}

// Whether a live process listens at `addr`: a connection to it shows it, and the peer
// credentials of that connection are the listener's (the kernel copies them from the
// listening socket at connect(), before any accept()), so its pid is known without
// reading other processes' descriptor tables - which /proc/net/unix and /proc/*/fd would
// need, with root's privileges. The listener sees a connection that ends at once.
// 1: live (`pid`, 0 when its backlog is full), 0: stale, -1: cannot tell (errno).
int probe_listener(const sockaddr_un& addr, pid_t& pid) {
    pid = 0;
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    int live = -1;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) {
        ucred cred{};
        socklen_t len = sizeof(cred);
        if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) pid = cred.pid;
        live = 1;
    } else if (errno == EAGAIN) {
        live = 1;  // a listener whose backlog is full
    } else if (errno == ECONNREFUSED) {
        live = 0;
    }
    const int saved = errno;
    ::close(fd);
    errno = saved;
    return live;
}

}  // namespace

namespace {

// The program's name from its command line (comm is cut at 15 characters); empty when it
// cannot be read.
std::string program_name(pid_t pid) {
    std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline");
    std::string name;
    if (!cmdline || !std::getline(cmdline, name, '\0')) return {};
    return name.substr(name.find_last_of('/') + 1);
}

}  // namespace

std::string describe_process(pid_t pid) {
    const std::string name = program_name(pid);
    return "pid " + std::to_string(pid) + (name.empty() ? "" : " (" + name + ")");
}

std::string process_label(pid_t pid) {
    const std::string name = program_name(pid);
    return name.empty() ? "pid " + std::to_string(pid) : name + "[" + std::to_string(pid) + "]";
}

ListenSocket::~ListenSocket() {
    if (fd_ >= 0) ::close(fd_);
    if (reserve_ >= 0) ::close(reserve_);
    // Only the socket this run made: never another's that took the path meanwhile.
    struct stat st {};
    if (bound_ && ::lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_)
        ::unlink(path_.c_str());
}

bool ListenSocket::open(const std::string& path, int64_t gid, const std::string& group,
                        std::string& error) {
    path_ = path;
    sockaddr_un addr{};
    if (!socket_address(path, addr, error)) return false;
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            error = "--listen " + path + ": exists and is not a socket (refusing to replace it)";
            return false;
        }
        pid_t pid = 0;
        const int live = probe_listener(addr, pid);
        if (live == 1) {
            error =
                "--listen " + path + ": " +
                (pid > 0 ? describe_process(pid) : std::string("a process (its backlog full)")) +
                " listens there already (stop it, or choose another path)";
            return false;
        }
        if (live < 0) {
            error = "--listen " + path + ": " + std::strerror(errno);
            return false;
        }
        ::unlink(path.c_str());  // a stale socket of an earlier run
    }
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd_ < 0) {
        error = "--listen " + path + ": " + std::strerror(errno);
        return false;
    }
    // Created without any permission (the umask is the process's: for the moment of the
    // bind only), then given its group and 0660, and only then listening: no one else can
    // connect before the mode is the one intended, whatever the umask was.
    const mode_t umask_before = ::umask(0777);
    const int bound = ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    const int bind_errno = errno;
    ::umask(umask_before);
    if (bound != 0) {
        error = "--listen " + path + ": " + std::strerror(bind_errno);
        return false;
    }
    bound_ = ::lstat(path.c_str(), &st) == 0;
    dev_ = st.st_dev;
    ino_ = st.st_ino;
    if (gid >= 0 && ::lchown(path.c_str(), static_cast<uid_t>(-1), static_cast<gid_t>(gid)) != 0) {
        error = "--listen-group " + group + ": " + path + ": " + std::strerror(errno);
        return false;
    }
    if (::chmod(path.c_str(), 0660) != 0 || ::listen(fd_, 128) != 0) {
        error = "--listen " + path + ": " + std::strerror(errno);
        return false;
    }
    reserve_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    return true;
}

int ListenSocket::accept(Clock::time_point now, std::size_t served, pid_t& peer_pid) {
    peer_pid = 0;
    const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
        ++connections_;
        ucred cred{};
        socklen_t len = sizeof(cred);
        if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) peer_pid = cred.pid;
        if (refusing_ != 0) {
            std::fprintf(stderr,
                         "insert-correlate: --listen %s: accepting connections again (%llu "
                         "refused since the last line, %llu in all)\n",
                         path_.c_str(), static_cast<unsigned long long>(refused_since_log_),
                         static_cast<unsigned long long>(refused_));
            refusing_ = 0;
            refused_since_log_ = 0;
        }
        return fd;
    }
    const int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR || err == ECONNABORTED) return -1;
    if ((err == EMFILE || err == ENFILE) && reserve_ >= 0) {
        // The reserve's slot takes the connection, which is closed at once: the producer
        // sees its connection end instead of waiting in the backlog.
        ::close(reserve_);
        const int refused = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (refused >= 0) {
            ::close(refused);
            ++refused_;
            ++refused_since_log_;
        }
        reserve_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    } else {
        resume_at_ = now + kRest;
    }
    refusing(err, now, served);
    return -1;
}

void ListenSocket::refusing(int err, Clock::time_point now, std::size_t served) {
    if (refusing_ == err && now - last_log_ < kLogPeriod) return;
    rlimit limit{};
    ::getrlimit(RLIMIT_NOFILE, &limit);
    const bool descriptors = err == EMFILE || err == ENFILE;
    std::string why = std::strerror(err);
    if (err == EMFILE)
        why += " (the limit is " + std::to_string(limit.rlim_cur) +
               " descriptors: LimitNOFILE=, ulimit -n)";
    std::fprintf(stderr,
                 "insert-correlate: --listen %s: %s connections: %s; %llu refused since the last "
                 "line, %llu in all; the %zu producers connected are still served\n",
                 path_.c_str(), descriptors ? "refusing" : "not accepting", why.c_str(),
                 static_cast<unsigned long long>(refused_since_log_),
                 static_cast<unsigned long long>(refused_), served);
    refusing_ = err;
    last_log_ = now;
    refused_since_log_ = 0;
}

}  // namespace insert::correlate

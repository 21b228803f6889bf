// The live run's --listen socket (docs/correlation.md 7). Created with mode 0660 whatever
// the umask (no moment in which anyone else could connect), its group --listen-group's. A
// path where a live process listens is refused, naming that process; a socket file no one
// listens on (an earlier run's) is replaced. Connections are accepted even when the
// descriptor table is full: a reserve descriptor is given up to accept the connection and
// close it at once, so that a producer is refused rather than left in the backlog and the
// producers connected go on being served; refusals are counted and said on stderr once
// per log period. Closing removes the path, if it is still this socket.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace insert::correlate {

class ListenSocket {
  public:
    using Clock = std::chrono::steady_clock;

    ListenSocket() = default;
    ListenSocket(const ListenSocket&) = delete;
    ListenSocket& operator=(const ListenSocket&) = delete;
    ~ListenSocket();

    // `gid` -1: the group the process creates files with. False with `error` (one line
    // naming --listen or --listen-group) when it cannot listen there.
    bool open(const std::string& path, int64_t gid, const std::string& group, std::string& error);
    int fd() const { return fd_; }
    // When accepting failed for want of memory: not to be polled until then.
    Clock::time_point resume_at() const { return resume_at_; }

    // The next connection (non-blocking, close-on-exec), or -1 when there is none or it was
    // refused. `served`: how many producers are connected (for the log line). `peer_pid`:
    // the connecting process (0 when unknown).
    int accept(Clock::time_point now, std::size_t served, pid_t& peer_pid);

    uint64_t connections() const { return connections_; }
    uint64_t refused() const { return refused_; }

  private:
    void refusing(int err, Clock::time_point now, std::size_t served);

    std::string path_;
    int fd_ = -1;
    int reserve_ = -1;  // /dev/null, given up to accept a connection when no descriptor is left
    bool bound_ = false;
    dev_t dev_ = 0;
    ino_t ino_ = 0;
    Clock::time_point resume_at_{};
    uint64_t connections_ = 0;
    uint64_t refused_ = 0;
    // The refusals going on: their error (0: none), the last line and the count since.
    int refusing_ = 0;
    Clock::time_point last_log_{};
    uint64_t refused_since_log_ = 0;
};

// "pid 1234 (insert-correlate)", or "pid 1234" when its name cannot be read.
std::string describe_process(pid_t pid);
// "insert-correlate[1234]", or "pid 1234" when its name cannot be read.
std::string process_label(pid_t pid);

}  // namespace insert::correlate

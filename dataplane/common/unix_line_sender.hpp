// JSON Lines to a Unix stream socket that comes and goes - insert-correlate's --listen,
// restarted or not up yet - for insert-dp (--records unix:PATH) and insert-trace (--unix).
// Never blocks: what the socket does not take at once waits in a bounded buffer, and while
// the collector is away it is reconnected with backoff (0.1 s doubling to 2 s). Only whole
// lines travel: a line that does not fit the buffer is dropped and counted, and so is the
// rest of a line a lost connection cut (the next connection starts with a whole line), so
// the collector never reads half a record. What happens is said on stderr: the first
// failure, a lost connection, each reconnection (with what was dropped meanwhile), and
// while away at most one line per 10 s. One thread uses a sender at a time.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace insert {

class UnixLineSender {
  public:
    using Clock = std::chrono::steady_clock;

    struct Counts {
        uint64_t connects = 0;  // connections made (1: never lost)
        uint64_t dropped = 0;   // lines dropped: no room, cut by a lost connection, or
                                // undelivered when the sender finished
    };

    // `label` starts every stderr line ("insert-trace: --unix /run/insert/correlator.sock").
    UnixLineSender(std::string path, std::string label, std::size_t buffer_bytes);
    ~UnixLineSender();
    UnixLineSender(const UnixLineSender&) = delete;
    UnixLineSender& operator=(const UnixLineSender&) = delete;

    // Whether `path` can name a Unix socket (its length); false with `error` otherwise.
    static bool valid_path(const std::string& path, std::string& error);

    // The first connection: false (and one line saying that it goes on trying) when the
    // collector is not there yet.
    bool start();
    // Queues `bytes` (lines; a line cut at the end is completed by the next call) and sends
    // what the socket takes.
    void write(std::string_view bytes);
    // Sends what waits and reconnects when it is time: call it now and then even when
    // nothing is written.
    void pump();
    // The end: tries until `wait` is over to deliver what waits; what is left is dropped,
    // counted and said. True when everything was delivered.
    bool finish(Clock::duration wait);

    Counts counts() const { return counts_; }
    bool connected() const { return fd_ >= 0; }
    std::size_t buffer_bytes() const { return limit_; }

  private:
    bool connect_now(Clock::time_point now);
    void lost(int err, Clock::time_point now);
    // No connection since `now`: the next attempt after the first backoff.
    void go_away(Clock::time_point now);
    void send_queued(Clock::time_point now);
    void send_lines(std::string_view lines);  // whole lines: sent, else queued
    void queue_lines(std::string_view lines);
    void drop_lines(std::string_view lines);
    void say_away(Clock::time_point now, bool force);

    std::string path_;
    std::string label_;
    std::size_t limit_;
    int fd_ = -1;
    std::string queue_;              // whole lines not yet sent, from head_ on
    std::size_t head_ = 0;           // where the unsent part of queue_ starts
    bool mid_line_ = false;          // the last byte sent was not the end of a line
    std::string partial_;            // the start of a line whose end has not been written yet
    bool dropping_partial_ = false;  // the line being written is dropped (no room)
    Counts counts_;
    // Away: since when, the last error, the next attempt and its backoff, the log.
    bool away_ = false;
    int away_errno_ = 0;
    Clock::time_point away_since_{};
    Clock::time_point next_attempt_{};
    Clock::duration backoff_{};
    Clock::time_point last_said_{};
    uint64_t dropped_said_ = 0;  // counts_.dropped when the last line was said
};

}  // namespace insert

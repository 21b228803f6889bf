// What a batch run tells the operator while it works (docs/correlation.md "Running it"):
// while the inputs are read, a line about once a second - the share of the inputs' bytes
// read, the lines and lines per second so far - rewritten in place on a terminal; then one
// line per phase with its time. A run over tens of GB says where it is, and every run where
// its time went. On by default when stderr is a terminal (and not --quiet), and with
// --progress; silent otherwise.
#pragma once

#include <chrono>
#include <cstdint>

namespace insert::correlate {

class BatchProgress {
  public:
    // `terminal`: stderr is one (the reading line is then rewritten in place).
    // `total_bytes`: of the inputs, for the share read.
    BatchProgress(bool enabled, bool terminal, uint64_t total_bytes);

    // Called after each block is decoded, with the totals so far: prints the reading line
    // on the first call and then about once a second.
    void reading(uint64_t bytes, uint64_t lines);
    // The phases' ends, each printing its line.
    void read_done(uint64_t bytes, uint64_t lines);
    void joined();
    void written(uint64_t e2e);
    // Before an error message: ends a reading line left open on the terminal.
    void interrupt();

  private:
    using Clock = std::chrono::steady_clock;
    double since(Clock::time_point& mark);  // seconds since mark; mark moves to now

    bool enabled_;
    bool terminal_;
    bool line_open_ = false;  // a reading line on the terminal, to be rewritten
    uint64_t total_bytes_;
    Clock::time_point start_ = Clock::now();
    Clock::time_point phase_ = start_;
    Clock::time_point next_line_ = start_;
};

}  // namespace insert::correlate

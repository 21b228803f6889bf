#include "correlator/output/batch_progress.hpp"

#include <cstdio>

namespace insert::correlate {

namespace {

constexpr std::chrono::seconds kPeriod{1};

// 1234567 -> "1.23M": the counts of a run, readable at a glance.
void print_count(uint64_t n) {
    if (n >= 1'000'000)
        std::fprintf(stderr, "%.2fM", static_cast<double>(n) / 1e6);
    else if (n >= 10'000)
        std::fprintf(stderr, "%.1fk", static_cast<double>(n) / 1e3);
    else
        std::fprintf(stderr, "%llu", static_cast<unsigned long long>(n));
}

}  // namespace

BatchProgress::BatchProgress(bool enabled, bool terminal, uint64_t total_bytes)
    : enabled_(enabled), terminal_(terminal), total_bytes_(total_bytes) {}

double BatchProgress::since(Clock::time_point& mark) {
    const Clock::time_point now = Clock::now();
    const double s = std::chrono::duration<double>(now - mark).count();
    mark = now;
    return s;
}

void BatchProgress::reading(uint64_t bytes, uint64_t lines) {
    if (!enabled_) return;
    const Clock::time_point now = Clock::now();
    if (now < next_line_) return;
    next_line_ = now + kPeriod;
    const double s = std::chrono::duration<double>(now - start_).count();
    const double share =
        total_bytes_ ? 100.0 * static_cast<double>(bytes) / static_cast<double>(total_bytes_)
                     : 100.0;
    std::fprintf(stderr, "%sinsert-correlate: reading %5.1f%%  ", terminal_ ? "\r" : "", share);
    print_count(lines);
    std::fprintf(stderr, " lines");
    if (s >= 0.5) {  // a rate over the first blocks alone says nothing
        std::fprintf(stderr, "  ");
        print_count(static_cast<uint64_t>(static_cast<double>(lines) / s));
        std::fprintf(stderr, " lines/s");
    }
    std::fprintf(stderr, "%s", terminal_ ? "\033[K" : "\n");
    std::fflush(stderr);
    line_open_ = terminal_;
}

void BatchProgress::interrupt() {
    if (line_open_) std::fputc('\n', stderr);
    line_open_ = false;
}

void BatchProgress::read_done(uint64_t bytes, uint64_t lines) {
    if (!enabled_) return;
    const double s = since(phase_);
    line_open_ = false;
    std::fprintf(stderr, "%sinsert-correlate: read ", terminal_ ? "\r" : "");
    print_count(lines);
    std::fprintf(stderr, " lines (%.1f MB) in %.2f s%s\n", static_cast<double>(bytes) / 1e6, s,
                 terminal_ ? "\033[K" : "");
}

void BatchProgress::joined() {
    if (enabled_) std::fprintf(stderr, "insert-correlate: joined in %.2f s\n", since(phase_));
}

void BatchProgress::written(uint64_t e2e) {
    if (!enabled_) return;
    const double s = since(phase_);
    std::fprintf(stderr, "insert-correlate: wrote ");
    print_count(e2e);
    std::fprintf(stderr, " e2e records in %.2f s (%.2f s in all)\n", s,
                 std::chrono::duration<double>(phase_ - start_).count());
}

}  // namespace insert::correlate

#include "dataplane/pipeline/exporter.hpp"

#include <pthread.h>
#include <sched.h>

#include <chrono>
#include <memory>

#include "dataplane/state/slot_pool.hpp"

namespace insert::pipeline {

namespace {

constexpr unsigned kBatch = 64;  // 16 KiB of records per ring visit
// Idle sleep: long enough not to steal a shared core from the workers, short enough that
// a 4096-record ring (~4 ms of records at a million msgs/s) never fills while asleep.
constexpr auto kIdleSleep = std::chrono::microseconds(200);
constexpr auto kProgressPeriod = std::chrono::seconds(1);

}  // namespace

Exporter::Exporter(const ExporterConfig& config, std::vector<RecordRing*> rings,
                   PacketSource* source)
    : config_(config), rings_(std::move(rings)), source_(source), writer_(config.records) {
    // The terminal summary sees records as written: final qp records merged per endpoint.
    if (config_.summary)
        writer_.set_observer([this](const state::Record& r) { summary_.observe(r); });
    if (config_.tick_ns != 0)
        writer_.hold_split_evictions(config_.idle_timeout_ns, config_.tick_ns);
    writer_.set_bounded_memory(config_.bounded_memory);
    writer_.set_event_sources(static_cast<unsigned>(rings_.size()));
}

Exporter::~Exporter() {
    if (thread_.joinable()) finish();
}

void Exporter::start() {
    thread_ = std::thread([this] { loop(); });
    pthread_setname_np(thread_.native_handle(), "insert-export");  // tells it apart in perf/top
    if (!config_.cpus.empty()) {
        // Threads started after rte_eal_init() inherit the main lcore's pinning; the
        // exporter belongs on whatever CPU is free, not on the reader's.
        cpu_set_t set;
        CPU_ZERO(&set);
        for (unsigned c : config_.cpus) CPU_SET(c, &set);
        pthread_setaffinity_np(thread_.native_handle(), sizeof set, &set);
    }
}

void Exporter::finish() {
    producers_done_.store(true, std::memory_order_release);
    if (thread_.joinable()) thread_.join();
    for (RecordRing* r : rings_) r->close();
}

unsigned Exporter::drain_once() {
    unsigned total = 0;
    for (unsigned w = 0; w < rings_.size(); ++w) {
        RecordRing* ring = rings_[w];
        for (;;) {
            // Records are formatted where they lie in the ring: copying them out first cost
            // as much as formatting them. Each is four cache lines a worker wrote on another
            // core, fetched 12 records ahead; the latency book's slot for it 8 ahead (which
            // reads the record's key), the histogram the slot names 4 ahead.
            const RecordRing::Peek batch = ring->peek(kBatch);
            const unsigned n = batch.size();
            if (n == 0) break;
            constexpr unsigned kRecordAhead = 12, kSlotAhead = 8, kHistogramAhead = 4;
            for (unsigned i = 0; i < n && i < kRecordAhead; ++i)
                state::prefetch_range(&batch[i], sizeof(state::Record));
            for (unsigned i = 0; i < n && i < kSlotAhead; ++i) writer_.prefetch(batch[i], 0);
            for (unsigned i = 0; i < n && i < kHistogramAhead; ++i) writer_.prefetch(batch[i], 1);
            for (unsigned i = 0; i < n; ++i) {
                if (i + kRecordAhead < n)
                    state::prefetch_range(&batch[i + kRecordAhead], sizeof(state::Record));
                if (i + kSlotAhead < n) writer_.prefetch(batch[i + kSlotAhead], 0);
                if (i + kHistogramAhead < n) writer_.prefetch(batch[i + kHistogramAhead], 1);
                writer_.write(batch[i], w);
            }
            ring->release(batch);
            total += n;
            if (n < kBatch) break;  // move on: keep every ring moving
        }
    }
    records_ += total;
    return total;
}

void Exporter::print_progress(double elapsed_s, bool last) {
    if (!config_.progress || source_ == nullptr) return;
    const SourceProgress p = source_->progress();
    const double mpps = elapsed_s > 0 ? p.frames / elapsed_s / 1e6 : 0.0;
    if (p.fraction >= 0)
        std::fprintf(stderr, "%sreplay: %5.1f%%  %llu frames  %.2f Mpps  %llu records%s",
                     config_.progress_is_tty ? "\r" : "", 100.0 * p.fraction,
                     static_cast<unsigned long long>(p.frames), mpps,
                     static_cast<unsigned long long>(records_),
                     config_.progress_is_tty && !last ? "\033[K" : "\n");
    else
        std::fprintf(stderr, "%s%llu frames  %.2f Mpps%s", config_.progress_is_tty ? "\r" : "",
                     static_cast<unsigned long long>(p.frames), mpps,
                     config_.progress_is_tty && !last ? "\033[K" : "\n");
    std::fflush(stderr);
    progress_printed_ = true;
}

void Exporter::loop() {
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    auto next_progress = start + kProgressPeriod;
    const auto flush_period = std::chrono::duration_cast<Clock::duration>(config_.flush_period);
    auto next_flush = start + flush_period;
    for (;;) {
        // Read the flag before draining: if it was set, every record was pushed before it.
        const bool done = producers_done_.load(std::memory_order_acquire);
        const unsigned n = drain_once();
        if (config_.stop_on_write_error && writer_.failed() && source_) source_->stop();
        if (n == 0) {
            if (done) break;
            std::this_thread::sleep_for(kIdleSleep);
        }
        const auto now = Clock::now();
        if (flush_period.count() > 0 && now >= next_flush) {
            writer_.flush();
            if (after_flush_) after_flush_();
            next_flush = now + flush_period;
        }
        if (now >= next_progress) {
            print_progress(std::chrono::duration<double>(now - start).count(), false);
            next_progress = now + kProgressPeriod;
        }
    }
    if (progress_printed_ && config_.progress_is_tty) {
        std::fputs("\r\033[K", stderr);
        std::fflush(stderr);
    }
}

}  // namespace insert::pipeline

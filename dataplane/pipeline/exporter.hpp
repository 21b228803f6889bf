// The exporter thread: off the worker cores, drains every worker's record ring, writes
// JSON Lines through exporter::RecordWriter, feeds the terminal summary and prints the
// progress line. Workers never wait on it unless their ring fills (record_ring.hpp).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "dataplane/export/human_summary.hpp"
#include "dataplane/export/record_writer.hpp"
#include "dataplane/pipeline/packet_source.hpp"
#include "dataplane/pipeline/record_ring.hpp"

namespace insert::pipeline {

struct ExporterConfig {
    std::FILE* records = nullptr;  // JSON Lines destination; null: summary only
    bool progress = false;         // print a progress line about once a second
    bool progress_is_tty = false;  // rewrite one line (\r) rather than append lines
    std::vector<unsigned> cpus;    // CPUs the thread may use (empty: inherit)
    // Keep the terminal summary (summary()); off when nobody will print it (`--quiet`):
    // it costs a histogram update per message.
    bool summary = true;
    // Replay with idle eviction: the engines' timeout and tick period, so that the evicted
    // parts of an endpoint split over workers are joined (RecordWriter::hold_split_evictions).
    uint64_t idle_timeout_ns = 0, tick_ns = 0;
    // Live appliance: keep nothing per endpoint once it is gone (RecordWriter::set_bounded_memory).
    bool bounded_memory = false;
    // Replay: a failed write (disk full, a closed pipe) stops the source, since no later
    // record can be written either. A live appliance keeps forwarding.
    bool stop_on_write_error = false;
    // Live appliance: the writer's buffer goes out at least this often, so that the records
    // of a quiet link reach a file, a pipe or the correlator's socket within it (0: when
    // the buffer is full, as replay does).
    std::chrono::nanoseconds flush_period{0};
};

class Exporter {
  public:
    Exporter(const ExporterConfig& config, std::vector<RecordRing*> rings, PacketSource* source);
    ~Exporter();
    Exporter(const Exporter&) = delete;
    Exporter& operator=(const Exporter&) = delete;

    // The JSON Lines destination, if it was not known at construction (before start()).
    void set_records(std::FILE* records) { writer_.set_output(records); }
    // Called on the exporter thread after each periodic flush (flush_period), even when no
    // record came: a destination that must be looked after (a socket reconnecting).
    void set_after_flush(std::function<void()> after_flush) {
        after_flush_ = std::move(after_flush);
    }
    void start();
    // Call once no worker will push again: drains what is left and joins the thread.
    void finish();

    // After finish(): the writer (for the summary record) and the terminal summary.
    exporter::RecordWriter& writer() { return writer_; }
    const exporter::HumanSummary& summary() const { return summary_; }
    uint64_t records() const { return records_; }

  private:
    void loop();
    unsigned drain_once();
    void print_progress(double elapsed_s, bool last);

    ExporterConfig config_;
    std::vector<RecordRing*> rings_;
    PacketSource* source_;
    exporter::RecordWriter writer_;
    exporter::HumanSummary summary_;
    std::function<void()> after_flush_;
    std::atomic<bool> producers_done_{false};
    std::thread thread_;
    uint64_t records_ = 0;
    bool progress_printed_ = false;
};

}  // namespace insert::pipeline

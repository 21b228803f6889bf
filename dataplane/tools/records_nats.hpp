// --nats (insert-dp replay, inline, monitor; docs/scale-out.md): the records also go to NATS
// JetStream through NatsPublisher (dataplane/common), partitioned by host and batched. To
// the exporter they are one FILE* as before: a fopencookie stream, unbuffered, that hands
// each block of whole lines the writer writes to the publisher and to the run's other
// destination (the --records file, stdout or socket) when there is one. The exporter thread
// writes - it routes and batches the lines, a few hundred ns each, and never waits on the
// bus; the publisher's own thread talks to the bus - and looks after it (after_flush()); once
// the pipeline is over the main thread writes the summary and finishes it.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/common/nats_publisher.hpp"

namespace insert::tools {

class RecordsNats {
  public:
    // Checked before anything starts: null with `error` (one line) when the configuration
    // cannot work (no libnats, a hosts file that does not load).
    static std::unique_ptr<RecordsNats> create(const NatsConfig& config, std::string& error);
    ~RecordsNats();
    RecordsNats(const RecordsNats&) = delete;
    RecordsNats& operator=(const RecordsNats&) = delete;

    // The publisher's thread (on `cpus`) and the FILE* in front of `downstream` (null: the
    // bus only). False with `error` when no FILE* can be made.
    bool open(std::FILE* downstream, const std::vector<unsigned>& cpus, std::string& error);
    std::FILE* file() const { return file_; }
    // The exporter thread, after each periodic flush: batches that waited long enough.
    void after_flush() { publisher_->pump(); }
    // The end, once nothing writes any more: what waits gets `wait` to be acknowledged.
    void finish(NatsPublisher::Clock::duration wait);

  private:
    explicit RecordsNats(std::unique_ptr<NatsPublisher> publisher)
        : publisher_(std::move(publisher)) {}
    static ssize_t write_records(void* cookie, const char* data, std::size_t size);

    std::unique_ptr<NatsPublisher> publisher_;
    std::FILE* downstream_ = nullptr;
    std::FILE* file_ = nullptr;
};

}  // namespace insert::tools

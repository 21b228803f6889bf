// --records unix:PATH (insert-dp inline/monitor, docs/live.md): the records go to
// insert-correlate's --listen socket through UnixLineSender - started even when the
// collector is not up yet, reconnected when it goes away or restarts, what it cannot take
// kept in a bounded buffer and past that dropped and counted (the summary's "unix"). To the
// exporter it is a FILE* like any other output: fopencookie, unbuffered, so that the
// writer's blocks of whole lines reach the sender as they are. The exporter thread writes
// and looks after it (after_flush()); once the pipeline is over the main thread writes the
// summary and finishes it.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include "dataplane/common/unix_line_sender.hpp"

namespace insert::tools {

// "unix:PATH": PATH, or empty when `records` names something else.
std::string records_socket_path(const std::string& records);

class RecordsSocket {
  public:
    // `label` starts every stderr line ("insert-dp monitor: --records unix:PATH").
    RecordsSocket(const std::string& path, const std::string& label, std::size_t buffer_bytes);
    ~RecordsSocket();
    RecordsSocket(const RecordsSocket&) = delete;
    RecordsSocket& operator=(const RecordsSocket&) = delete;

    // The first connection attempt and the FILE*; false with `error` when no FILE* can be made
    // (a collector that is not there is not an error).
    bool open(std::string& error);
    std::FILE* file() const { return file_; }
    // The exporter thread, after each periodic flush: reconnection, what waits.
    void after_flush() { sender_.pump(); }
    // The end, once nothing writes any more: delivers what waits (for `wait` at most).
    void finish(UnixLineSender::Clock::duration wait);
    UnixLineSender::Counts counts() const { return sender_.counts(); }

  private:
    UnixLineSender sender_;
    std::FILE* file_ = nullptr;
};

}  // namespace insert::tools

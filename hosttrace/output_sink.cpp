#include "hosttrace/output_sink.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>

namespace insert::hosttrace {

namespace {

// At the end, what waits for the socket gets this long, and what waits for the bus as long
// again (the stop stays within 2 s).
constexpr auto kSocketFinish = std::chrono::milliseconds(500);
constexpr auto kNatsFinish = std::chrono::milliseconds(500);

}  // namespace

std::unique_ptr<OutputSink> OutputSink::open(const TraceOptions& options, std::string& error) {
    const std::string& path = options.output;
    const std::string& unix_socket = options.unix_socket;
    std::unique_ptr<OutputSink> sink(new OutputSink());
    if (options.nats.enabled()) {
        sink->nats_ = NatsPublisher::create(options.nats_config, error);
        if (!sink->nats_) return nullptr;
        sink->nats_->start();  // not there yet: said, and tried again
    }
    if (!unix_socket.empty()) {
        if (!UnixLineSender::valid_path(unix_socket, error)) {
            error = "--unix " + error;
            return nullptr;
        }
        sink->socket_ = std::make_unique<UnixLineSender>(
            unix_socket, "insert-trace: --unix " + unix_socket, options.unix_buffer);
        sink->socket_->start();  // not there yet: said, and tried again
        return sink;
    }
    if (path == "-") {
        sink->file_ = stdout;
        return sink;
    }
    sink->file_ = std::fopen(path.c_str(), "w");
    if (!sink->file_) {
        error = "--output " + path + ": " + std::strerror(errno);
        return nullptr;
    }
    sink->owns_file_ = true;
    return sink;
}

OutputSink::~OutputSink() {
    flush();
    if (socket_) socket_->finish(kSocketFinish);
    if (nats_) nats_->finish(kNatsFinish);
    if (owns_file_) std::fclose(file_);
}

bool OutputSink::write(std::string_view lines) {
    if (nats_) nats_->write(lines);
    if (socket_) {
        socket_->write(lines);
        return true;
    }
    if (failed_) return false;
    if (std::fwrite(lines.data(), 1, lines.size(), file_) != lines.size()) failed_ = true;
    return !failed_;
}

bool OutputSink::flush() {
    if (nats_) nats_->pump();
    if (socket_) {
        socket_->pump();
        return true;
    }
    if (failed_) return false;
    if (std::fflush(file_) != 0) failed_ = true;
    return !failed_;
}

}  // namespace insert::hosttrace

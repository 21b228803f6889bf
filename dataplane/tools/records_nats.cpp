#include "dataplane/tools/records_nats.hpp"

#include <cerrno>
#include <cstring>

namespace insert::tools {

std::unique_ptr<RecordsNats> RecordsNats::create(const NatsConfig& config, std::string& error) {
    auto publisher = NatsPublisher::create(config, error);
    if (!publisher) return nullptr;
    return std::unique_ptr<RecordsNats>(new RecordsNats(std::move(publisher)));
}

RecordsNats::~RecordsNats() {
    if (file_) std::fclose(file_);  // the downstream FILE* is the run's to close
}

ssize_t RecordsNats::write_records(void* cookie, const char* data, std::size_t size) {
    auto* self = static_cast<RecordsNats*>(cookie);
    self->publisher_->write(std::string_view(data, size));
    if (!self->downstream_) return static_cast<ssize_t>(size);
    // The writer's blocks are its flushes: they reach the file (a `tail -f`, a pipe into the
    // correlator) as they did without the bus.
    if (std::fwrite(data, 1, size, self->downstream_) != size ||
        std::fflush(self->downstream_) != 0)
        return -1;  // the writer counts it as the failed write it is
    return static_cast<ssize_t>(size);
}

bool RecordsNats::open(std::FILE* downstream, const std::vector<unsigned>& cpus,
                       std::string& error) {
    cookie_io_functions_t io{};
    io.write = write_records;
    file_ = ::fopencookie(this, "w", io);
    if (!file_) {
        error = std::string("--nats: ") + std::strerror(errno);
        return false;
    }
    std::setvbuf(file_, nullptr, _IONBF, 0);
    downstream_ = downstream;
    publisher_->start(cpus);
    return true;
}

void RecordsNats::finish(NatsPublisher::Clock::duration wait) {
    if (file_) std::fflush(file_);
    publisher_->finish(wait);
}

}  // namespace insert::tools

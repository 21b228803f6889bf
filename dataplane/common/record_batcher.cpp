#include "dataplane/common/record_batcher.hpp"

#include "dataplane/common/record_route.hpp"

namespace insert {

RecordBatcher::RecordBatcher(HostPartitions partitions, std::size_t batch_bytes,
                             Clock::duration linger)
    : partitions_(partitions),
      batch_bytes_(batch_bytes),
      linger_(linger),
      open_(partitions.count()) {}

void RecordBatcher::write(std::string_view bytes, Clock::time_point now, BatchSink& sink) {
    if (!partial_.empty()) {  // the end of a line begun before
        const std::size_t nl = bytes.find('\n');
        partial_.append(bytes.substr(0, nl == std::string_view::npos ? bytes.size() : nl + 1));
        if (nl == std::string_view::npos) return;
        line(partial_, now, sink);
        partial_.clear();
        bytes.remove_prefix(nl + 1);
    }
    while (!bytes.empty()) {
        const std::size_t nl = bytes.find('\n');
        if (nl == std::string_view::npos) {
            partial_.assign(bytes);
            break;
        }
        line(bytes.substr(0, nl + 1), now, sink);
        bytes.remove_prefix(nl + 1);
    }
    seal_aged(now, sink);
}

void RecordBatcher::line(std::string_view text, Clock::time_point now, BatchSink& sink) {
    if (text.size() <= 1) return;  // an empty line is no record
    const RecordRoute route = route_record(text.substr(0, text.size() - 1), partitions_);
    if (route.every) {
        for (uint32_t p = 0; p < partitions_.count(); ++p) append(p, text, now, sink);
        return;
    }
    for (uint8_t i = 0; i < route.count; ++i) append(route.partition[i], text, now, sink);
}

void RecordBatcher::append(uint32_t partition, std::string_view text, Clock::time_point now,
                           BatchSink& sink) {
    Open& o = open_[partition];
    if (!o.body.empty() && o.body.size() + text.size() > batch_bytes_) seal(partition, sink);
    if (!sink.room(text.size(), open_bytes_)) {
        ++counts_.dropped;
        return;
    }
    if (o.body.empty()) {
        o.since = now;
        o.body.reserve(batch_bytes_);
    }
    o.body.append(text);
    ++o.records;
    open_bytes_ += text.size();
    ++counts_.records;
    if (o.body.size() >= batch_bytes_) seal(partition, sink);
}

void RecordBatcher::seal(uint32_t partition, BatchSink& sink) {
    Open& o = open_[partition];
    if (o.body.empty()) return;
    RecordBatch b;
    b.partition = partition;
    b.seq = o.next_seq++;
    b.records = o.records;
    b.body = std::move(o.body);
    open_bytes_ -= b.body.size();
    o.body = std::string();
    o.records = 0;
    ++counts_.batches;
    sink.sealed(std::move(b));
}

void RecordBatcher::seal_aged(Clock::time_point now, BatchSink& sink) {
    for (uint32_t p = 0; p < open_.size(); ++p)
        if (!open_[p].body.empty() && now - open_[p].since >= linger_) seal(p, sink);
}

void RecordBatcher::seal_all(BatchSink& sink, bool end) {
    if (end && !partial_.empty()) {
        // A line never ended is dropped: once per partition it would have gone to is not
        // known, so once.
        ++counts_.dropped;
        partial_.clear();
    }
    for (uint32_t p = 0; p < open_.size(); ++p) seal(p, sink);
}

}  // namespace insert

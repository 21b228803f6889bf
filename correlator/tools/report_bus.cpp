#include "correlator/tools/report_bus.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>

#include "dataplane/common/nats_leases.hpp"
#include "dataplane/common/nats_stream_reader.hpp"
#include "dataplane/common/version.hpp"

namespace insert::correlate {

namespace {

// Malformed messages said one by one, at most; the rest are counted.
constexpr uint64_t kMalformedSaid = 10;

std::optional<uint64_t> number(std::optional<std::string_view> v) {
    if (!v || v->empty()) return std::nullopt;
    uint64_t n = 0;
    const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (ec != std::errc() || end != v->data() + v->size()) return std::nullopt;
    return n;
}

std::string_view major_of(std::string_view version) {
    return version.substr(0, version.find('.'));
}

}  // namespace

std::string malformed_message(
    const std::function<std::optional<std::string_view>(const char*)>& header,
    std::string_view body) {
    const auto producer = header("Insert-Producer");
    if (!producer || producer->empty()) return "no Insert-Producer header";
    if (!number(header("Insert-Partition"))) return "no Insert-Partition header with a number";
    // Another major schema's records would be read as something they are not.
    if (const auto schema = header("Insert-Schema");
        schema && major_of(*schema) != major_of(kRecordSchema))
        return "Insert-Schema " + std::string(*schema) + ", this report reads schema " +
               std::string(kRecordSchema);
    if (body.empty()) return "no records (an empty body)";
    if (body.back() != '\n') return "its last line has no newline (a batch cut short)";
    const auto lines = static_cast<uint64_t>(std::count(body.begin(), body.end(), '\n'));
    const auto records = number(header("Insert-Records"));
    if (!records) return "no Insert-Records header with a number";
    if (*records != lines)
        return "Insert-Records " + std::to_string(*records) + ", but " + std::to_string(lines) +
               (lines == 1 ? " line" : " lines");
    return {};
}

int read_output_stream(const ReportBusOptions& options, const std::string& label,
                       const std::function<void(std::string_view)>& line, ReportBusCounts& counts,
                       std::string& error) {
    StreamReadConfig config;
    std::string_view rest = options.url;
    while (!rest.empty()) {
        const std::size_t comma = rest.find(',');
        config.servers.emplace_back(rest.substr(0, comma));
        rest.remove_prefix(comma == std::string_view::npos ? rest.size() : comma + 1);
    }
    config.stream = output_stream_name(options.subject);
    config.client = "insert-report";
    config.label = label;
    config.wait = std::chrono::milliseconds(static_cast<int64_t>(options.wait_s * 1000));

    const StreamReadResult r = read_stream(config, [&](const StreamMessage& m) {
        ++counts.messages;
        const std::string_view body = m.data();
        const std::string why =
            malformed_message([&m](const char* key) { return m.header(key); }, body);
        if (!why.empty()) {
            if (counts.malformed++ < kMalformedSaid)
                std::fprintf(stderr,
                             "%s: skipped a malformed message on %.*s (stream message %llu): %s "
                             "(counted)\n",
                             label.c_str(), static_cast<int>(m.subject().size()),
                             m.subject().data(), static_cast<unsigned long long>(m.seq()),
                             why.c_str());
            return;
        }
        std::string_view left = body;
        while (!left.empty()) {
            const std::size_t nl = left.find('\n');  // the body ends with one (checked)
            std::string_view l = left.substr(0, nl);
            if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
            if (!l.empty()) {
                line(l);
                ++counts.lines;
            }
            left.remove_prefix(nl + 1);
        }
    });
    if (r.status == StreamReadResult::Status::no_stream) {
        error = "no output stream " + config.stream + " on the bus (it is made when an " +
                "insert-correlate --nats --nats-subject " + options.subject + " instance starts)";
        return 1;
    }
    if (r.status != StreamReadResult::Status::ok) {
        error = r.error;
        return 1;
    }
    if (counts.malformed)
        std::fprintf(stderr, "%s: %llu of %llu messages of %s were malformed (skipped)\n",
                     label.c_str(), static_cast<unsigned long long>(counts.malformed),
                     static_cast<unsigned long long>(counts.messages), config.stream.c_str());
    return 0;
}

}  // namespace insert::correlate

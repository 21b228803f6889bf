#include "correlator/input/record_estimate.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "correlator/input/ingest.hpp"

namespace insert::correlate {

namespace {

// A file's first whole lines (all of a file no longer than the sample), followed by the
// parser's padding; empty when there is no such line or the file cannot be read.
std::vector<char> first_lines(const std::string& path, std::size_t& size, uint64_t& file_bytes,
                              bool& whole_file) {
    std::vector<char> text;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO: no wait
    if (fd < 0) return text;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        file_bytes = static_cast<uint64_t>(st.st_size);
        text.assign(kEstimateSampleBytes + simdjson::SIMDJSON_PADDING, '\0');
        const ssize_t got = ::pread(fd, text.data(), kEstimateSampleBytes, 0);
        size = got > 0 ? static_cast<std::size_t>(got) : 0;
        whole_file = size == file_bytes;
        if (!whole_file) {  // cut after the last newline read
            while (size > 0 && text[size - 1] != '\n') --size;
        }
        if (size == 0) text.clear();
    }
    ::close(fd);
    return text;
}

}  // namespace

RecordEstimate estimate_records(const std::vector<std::string>& inputs) {
    RecordEstimate total;
    HostNames scratch_hosts;  // the sample's host names are not the run's
    LineParser parser(scratch_hosts);
    for (const std::string& in : inputs) {
        if (in == "-") continue;
        std::size_t size = 0;
        uint64_t file_bytes = 0;
        bool whole_file = false;
        const std::vector<char> text = first_lines(in, size, file_bytes, whole_file);
        if (text.empty()) continue;
        Ingested sample;
        IngestCounts counts;
        std::vector<BadLine> bad;
        parse_block(parser, text.data(), size, 0, 1, whole_file, sample, counts, bad);
        const auto scale = [&](uint64_t n) {
            const double per_byte = static_cast<double>(n) / static_cast<double>(size);
            return static_cast<uint64_t>(per_byte * static_cast<double>(file_bytes) * 1.25) + 16;
        };
        total.msgs += scale(counts.msg);
        total.qps += scale(counts.qp);
        total.events += scale(counts.host);
    }
    return total;
}

}  // namespace insert::correlate

#include "dataplane/common/nats_client.hpp"

#include <algorithm>
#include <cstdlib>

namespace insert::nats_client {

namespace {

constexpr std::string_view kDescriptionHead = "INSERT records by host: ";
constexpr std::string_view kDescriptionTail = " partitions (docs/scale-out.md)";

}  // namespace

int64_t backoff_ms(int attempts) {
    const int doublings = std::clamp(attempts - 1, 0, 10);
    return std::min(kFirstBackoffMs << doublings, kMaxBackoffMs);
}

bool valid_prefix(std::string_view p) {
    return !p.empty() && p.size() <= 64 && std::all_of(p.begin(), p.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-';
    });
}

std::string partition_subject(std::string_view prefix, unsigned partition) {
    std::string s(prefix);
    s += ".part.";
    s += std::to_string(partition);
    return s;
}

std::string stream_description(unsigned partitions) {
    std::string d(kDescriptionHead);
    d += std::to_string(partitions);
    d += kDescriptionTail;
    return d;
}

unsigned described_partitions(std::string_view description) {
    if (!description.starts_with(kDescriptionHead)) return 0;
    const std::string digits(description.substr(kDescriptionHead.size(), 10));
    return static_cast<unsigned>(std::strtoul(digits.c_str(), nullptr, 10));
}

bool subject_matches(std::string_view pattern, std::string_view subject) {
    for (;;) {
        const std::size_t pd = pattern.find('.'), sd = subject.find('.');
        const std::string_view pt = pattern.substr(0, pd), st = subject.substr(0, sd);
        if (pt == ">") return !subject.empty();
        if (pt != "*" && pt != st) return false;
        if (pd == std::string_view::npos || sd == std::string_view::npos)
            return pd == std::string_view::npos && sd == std::string_view::npos;
        pattern.remove_prefix(pd + 1);
        subject.remove_prefix(sd + 1);
    }
}

std::string partition_list(const std::vector<unsigned>& parts) {
    std::string out;
    for (std::size_t i = 0; i < parts.size();) {
        std::size_t j = i;
        while (j + 1 < parts.size() && parts[j + 1] == parts[j] + 1) ++j;
        if (!out.empty()) out += ',';
        out += std::to_string(parts[i]);
        if (j > i) out += '-' + std::to_string(parts[j]);
        i = j + 1;
    }
    return out;
}

}  // namespace insert::nats_client

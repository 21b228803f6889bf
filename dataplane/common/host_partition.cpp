#include "dataplane/common/host_partition.hpp"

#include <arpa/inet.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace insert {

bool canonical_ip(std::string_view text, std::string& out) {
    char buf[INET6_ADDRSTRLEN + 1] = {};
    if (text.empty() || text.size() >= sizeof(buf)) return false;
    std::memcpy(buf, text.data(), text.size());
    unsigned char bytes[16] = {};
    char printed[INET6_ADDRSTRLEN] = {};
    if (inet_pton(AF_INET, buf, bytes) == 1) {
        inet_ntop(AF_INET, bytes, printed, sizeof(printed));
    } else if (inet_pton(AF_INET6, buf, bytes) == 1) {
        static constexpr unsigned char kV4Mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (std::memcmp(bytes, kV4Mapped, sizeof(kV4Mapped)) == 0)
            inet_ntop(AF_INET, bytes + 12, printed, sizeof(printed));
        else
            inet_ntop(AF_INET6, bytes, printed, sizeof(printed));
    } else {
        return false;
    }
    out = printed;
    return true;
}

bool HostMap::load(const std::string& path, std::string& error) {
    std::ifstream in(path);
    if (!in) {
        error = path + ": " + std::strerror(errno);
        return false;
    }
    std::stringstream text;
    text << in.rdbuf();
    return parse(text.str(), path, error);
}

bool HostMap::parse(std::string_view text, const std::string& name, std::string& error) {
    primary_of_.clear();
    std::unordered_map<std::string, unsigned> line_of;  // every address listed: its line
    unsigned number = 0;
    while (!text.empty()) {
        const std::size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
        ++number;
        if (const std::size_t hash = line.find('#'); hash != std::string_view::npos)
            line = line.substr(0, hash);
        std::vector<std::string> words;
        std::size_t i = 0;
        while (i < line.size()) {
            while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
            std::size_t j = i;
            while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
            if (j > i) words.emplace_back(line.substr(i, j - i));
            i = j;
        }
        std::string primary;
        for (std::size_t w = 0; w < words.size(); ++w) {
            std::string ip;
            const std::string where = name + ":" + std::to_string(number) + ": ";
            if (!canonical_ip(words[w], ip)) {
                error = where + "'" + words[w] + "' is not an IP address";
                return false;
            }
            if (const auto seen = line_of.find(ip); seen != line_of.end()) {
                error = where + ip + " is listed already (line " + std::to_string(seen->second) +
                        "): an address belongs to one host";
                return false;
            }
            line_of.emplace(ip, number);
            if (w == 0)
                primary = ip;
            else
                primary_of_.emplace(ip, primary);
        }
    }
    return true;
}

std::string_view HostMap::key_of(std::string_view ip) const {
    const auto it = primary_of_.find(ip);
    return it == primary_of_.end() ? ip : std::string_view(it->second);
}

}  // namespace insert

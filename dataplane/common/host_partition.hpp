// Which partition of the bus a host belongs to (SPEC 10 "Scale-out", docs/scale-out.md).
// The producers and the correlator's instances must agree on it without talking: the
// dataplane knows a host only by the IP addresses on the wire, the tracer by the addresses
// of its GIDs. So a host's key is its IP address as records write it (dotted quad, or IPv6
// as RFC 5952 compresses it), and a multi-homed host is one key through a deployment file
// (--nats-hosts) that maps each extra address to the host's primary one. The partition of
// a key is FNV-1a 64 of its text, modulo the deployment's partition count: a hash anyone
// can recompute from the text alone (the tests do it in Python), stable across builds,
// machines and versions - what std::hash does not promise.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace insert {

// FNV-1a, 64 bits (offset basis 0xcbf29ce484222325, prime 0x100000001b3), over the bytes.
constexpr uint64_t fnv1a64(std::string_view bytes) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char c : bytes) {
        h ^= static_cast<unsigned char>(c);
        h *= 0x100000001b3ull;
    }
    return h;
}

// An address in the text records use: IPv4 dotted, IPv6 compressed (an IPv4-mapped IPv6
// address as its IPv4 text, as the tracer writes a GID that holds one). False when `text`
// is no address.
bool canonical_ip(std::string_view text, std::string& out);

// The deployment's hosts file: each line `PRIMARY [EXTRA ...]` (addresses separated by
// blanks; `#` starts a comment) says that the EXTRA addresses belong to the host keyed by
// PRIMARY. An address not listed is a host of its own.
class HostMap {
  public:
    // False with `error` (the file, the line number and what is wrong) when the file cannot
    // be read, a word is no address, or an address is listed twice.
    bool load(const std::string& path, std::string& error);
    // The same from text (the file's content); `name` for the errors.
    bool parse(std::string_view text, const std::string& name, std::string& error);

    // The key of the host that `ip` (record text) belongs to: its primary address, or `ip`.
    std::string_view key_of(std::string_view ip) const;
    std::size_t size() const { return primary_of_.size(); }

  private:
    struct Hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const { return fnv1a64(s); }
    };
    // Every extra address -> its host's primary address (primaries map to nothing).
    std::unordered_map<std::string, std::string, Hash, std::equal_to<>> primary_of_;
};

class HostPartitions {
  public:
    // `partitions` >= 1; `hosts` may be null (every address a host), else it must outlive this.
    HostPartitions(unsigned partitions, const HostMap* hosts)
        : partitions_(partitions), hosts_(hosts) {}

    unsigned count() const { return partitions_; }
    // The partition of the host that address `ip` (record text) belongs to.
    unsigned of_ip(std::string_view ip) const {
        const std::string_view key = hosts_ ? hosts_->key_of(ip) : ip;
        return static_cast<unsigned>(fnv1a64(key) % partitions_);
    }

  private:
    unsigned partitions_;
    const HostMap* hosts_;
};

}  // namespace insert

#include "hosttrace/softverbs/config.hpp"

#include <cstdlib>
#include <cstring>

namespace insert::softverbs {

namespace {

bool read_fraction(const char* name, double& out, std::string& error) {
    const char* v = std::getenv(name);
    if (!v || !*v) return true;
    char* end = nullptr;
    const double d = std::strtod(v, &end);
    if (*end != '\0' || d < 0 || d > 1) {
        error = std::string(name) + " must be a fraction in [0, 1], got '" + v + "'";
        return false;
    }
    out = d;
    return true;
}

bool read_uint(const char* name, uint64_t& out, std::string& error) {
    const char* v = std::getenv(name);
    if (!v || !*v) return true;
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v, &end, 10);
    if (*end != '\0') {
        error = std::string(name) + " must be a non-negative integer, got '" + v + "'";
        return false;
    }
    out = n;
    return true;
}

}  // namespace

bool load_config(Config& out, std::string& error) {
    if (!read_fraction("SOFTVERBS_DROP", out.drop, error) ||
        !read_fraction("SOFTVERBS_REORDER", out.reorder, error) ||
        !read_fraction("SOFTVERBS_DELAY", out.delay, error) ||
        !read_fraction("SOFTVERBS_ECN", out.ecn, error))
        return false;
    uint64_t delay_us = out.delay_us;
    if (!read_uint("SOFTVERBS_DELAY_US", delay_us, error) ||
        !read_uint("SOFTVERBS_SEED", out.seed, error))
        return false;
    out.delay_us = static_cast<uint32_t>(delay_us);
    if (const char* v = std::getenv("SOFTVERBS_SPORT"); v && *v) {
        if (std::strcmp(v, "symmetric") == 0)
            out.sport = SourcePort::symmetric;
        else if (std::strcmp(v, "per_qp") == 0)
            out.sport = SourcePort::per_qp;
        else {
            error = std::string("SOFTVERBS_SPORT must be symmetric or per_qp, got '") + v + "'";
            return false;
        }
    }
    if (const char* v = std::getenv("SOFTVERBS_VERIFY_ICRC"); v && std::strcmp(v, "0") == 0)
        out.verify_icrc = false;
    if (const char* v = std::getenv("SOFTVERBS_DEBUG"); v && std::strcmp(v, "1") == 0)
        out.debug = true;
    return true;
}

}  // namespace insert::softverbs

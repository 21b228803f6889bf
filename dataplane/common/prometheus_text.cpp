#include "dataplane/common/prometheus_text.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <charconv>
#include <cmath>

namespace insert::prometheus {

namespace {

constexpr std::array<double, 22> kLatencyBuckets = {
    1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3,
    5e-3, 0.01, 0.02, 0.05, 0.1,  0.2,  0.5,  1.0,  2.0,  5.0,  10.0,
};

std::string_view type_name(MetricType t) {
    switch (t) {
        case MetricType::counter:
            return "counter";
        case MetricType::gauge:
            return "gauge";
        case MetricType::histogram:
            return "histogram";
    }
    return "untyped";
}

template <typename Int>
void append_int(std::string& out, Int v) {
    char digits[24];
    const auto r = std::to_chars(digits, digits + sizeof digits, v);
    out.append(digits, r.ptr);
}

// The shortest digits that read back as `v`, laid out as Go's strconv 'g' does (what
// Prometheus and its client libraries write: le="0.0002", le="1e-05", 2.5e+06): fixed for
// decimal exponents from -4 to 5, scientific with a two-digit exponent otherwise.
void append_shortest(std::string& out, double v) {
    char sci[40];
    const auto r = std::to_chars(sci, sci + sizeof sci, v, std::chars_format::scientific);
    const std::string_view text(sci, static_cast<std::size_t>(r.ptr - sci));
    const std::size_t e = text.find('e');
    std::string_view mantissa = text.substr(0, e);
    int exp = 0;
    std::from_chars(text.data() + e + 1 + (text[e + 1] == '+'), text.data() + text.size(), exp);
    if (!mantissa.empty() && mantissa.front() == '-') {
        out += '-';
        mantissa.remove_prefix(1);
    }
    std::string digits;
    for (const char c : mantissa)
        if (c != '.') digits += c;
    if (exp < -4 || exp >= 6) {
        out += digits.front();
        if (digits.size() > 1) {
            out += '.';
            out.append(digits, 1);
        }
        out += exp < 0 ? "e-" : "e+";
        const int a = exp < 0 ? -exp : exp;
        if (a < 10) out += '0';
        append_int(out, a);
    } else if (exp < 0) {
        out += "0.";
        out.append(static_cast<std::size_t>(-exp - 1), '0');
        out += digits;
    } else {
        const auto whole = static_cast<std::size_t>(exp) + 1;
        if (digits.size() <= whole) {
            out += digits;
            out.append(whole - digits.size(), '0');
        } else {
            out.append(digits, 0, whole);
            out += '.';
            out.append(digits, whole);
        }
    }
}

}  // namespace

void Histogram::observe(double v) {
    // le: a value equal to a bound is in that bound's bucket.
    const auto at = std::lower_bound(bounds_.begin(), bounds_.end(), v);
    ++counts_[static_cast<std::size_t>(at - bounds_.begin())];
    ++count_;
    sum_ += v;
}

void Histogram::merge(const Histogram& other) {
    assert(other.bounds_.data() == bounds_.data());
    for (std::size_t i = 0; i < counts_.size() && i < other.counts_.size(); ++i)
        counts_[i] += other.counts_[i];
    count_ += other.count_;
    sum_ += other.sum_;
}

std::span<const double> latency_buckets_seconds() {
    return kLatencyBuckets;
}

bool valid_name(std::string_view name, bool metric) {
    if (name.empty()) return false;
    for (std::size_t i = 0; i < name.size(); ++i) {
        const char c = name[i];
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                        (metric && c == ':') || (i > 0 && c >= '0' && c <= '9');
        if (!ok) return false;
    }
    return true;
}

void append_escaped(std::string& out, std::string_view text, bool quote) {
    for (const char c : text) {
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '\n') {
            out += "\\n";
        } else if (quote && c == '"') {
            out += "\\\"";
        } else {
            out += c;
        }
    }
}

void append_value(std::string& out, double v) {
    if (std::isnan(v)) {
        out += "NaN";
    } else if (std::isinf(v)) {
        out += v > 0 ? "+Inf" : "-Inf";
    } else {
        append_shortest(out, v);
    }
}

TextWriter& TextWriter::family(std::string_view name, MetricType type, std::string_view help) {
    assert(valid_name(name, true));
    name_ = name;
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    append_escaped(out_, help, false);
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type_name(type);
    out_ += '\n';
    return *this;
}

void TextWriter::series(std::string_view suffix, std::span<const Label> labels,
                        const Label* extra) {
    out_ += name_;
    out_ += suffix;
    if (labels.empty() && extra == nullptr) {
        out_ += ' ';
        return;
    }
    out_ += '{';
    bool first = true;
    const auto one = [&](const Label& l) {
        assert(valid_name(l.name, false));
        if (!first) out_ += ',';
        first = false;
        out_ += l.name;
        out_ += "=\"";
        append_escaped(out_, l.value, true);
        out_ += '"';
    };
    for (const Label& l : labels) one(l);
    if (extra) one(*extra);
    out_ += "} ";
}

TextWriter& TextWriter::sample(std::span<const Label> labels, uint64_t value) {
    series("", labels, nullptr);
    append_int(out_, value);
    out_ += '\n';
    return *this;
}

TextWriter& TextWriter::sample(std::span<const Label> labels, int64_t value) {
    series("", labels, nullptr);
    append_int(out_, value);
    out_ += '\n';
    return *this;
}

TextWriter& TextWriter::sample(std::span<const Label> labels, double value) {
    series("", labels, nullptr);
    append_value(out_, value);
    out_ += '\n';
    return *this;
}

TextWriter& TextWriter::histogram(std::span<const Label> labels, const Histogram& h) {
    uint64_t cumulative = 0;
    std::string bound;
    const std::vector<uint64_t>& counts = h.counts();
    for (std::size_t i = 0; i < counts.size(); ++i) {
        cumulative += counts[i];
        bound.clear();
        if (i < h.bounds().size())
            append_value(bound, h.bounds()[i]);
        else
            bound = "+Inf";
        const Label le{"le", bound};
        series("_bucket", labels, &le);
        append_int(out_, cumulative);
        out_ += '\n';
    }
    series("_sum", labels, nullptr);
    append_value(out_, h.sum());
    out_ += '\n';
    series("_count", labels, nullptr);
    append_int(out_, h.count());
    out_ += '\n';
    return *this;
}

}  // namespace insert::prometheus

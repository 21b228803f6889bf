// Unsigned integers as decimal text, written at a cursor. Records are mostly numbers (a
// `msg` record has 20 of them, half of them 19-digit nanosecond timestamps), and both the
// exporter and insert-gen's truth writer emit hundreds of megabytes of them.
//
// Digits come from a table of pairs, in 8-digit chunks of 32-bit arithmetic: a loop of
// dependent 64-bit divisions by 10 or 100 costs ~85 instructions per timestamp, while the
// chunks' pairs are independent of each other.
#pragma once

#include <cstdint>
#include <cstring>

namespace insert::decimal {

namespace detail {

inline constexpr char kDigitPairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

[[gnu::always_inline]] inline char* two_digits(char* d, uint32_t v) {
    std::memcpy(d, &kDigitPairs[v * 2], 2);
    return d + 2;
}

// Exactly eight digits, leading zeros included (v < 10^8).
[[gnu::always_inline]] inline char* eight_digits(char* d, uint32_t v) {
    const uint32_t high = v / 10'000, low = v % 10'000;
    two_digits(d, high / 100);
    two_digits(d + 2, high % 100);
    two_digits(d + 4, low / 100);
    two_digits(d + 6, low % 100);
    return d + 8;
}

// v < 10^8, without leading zeros. Most counters are 0 or 1.
[[gnu::always_inline]] inline char* short_num(char* d, uint32_t v) {
    if (v < 10) {
        *d = static_cast<char>('0' + v);
        return d + 1;
    }
    if (v < 100) return two_digits(d, v);
    const int n = v < 1'000        ? 3
                  : v < 10'000     ? 4
                  : v < 100'000    ? 5
                  : v < 1'000'000  ? 6
                  : v < 10'000'000 ? 7
                                   : 8;
    char* const end = d + n;
    char* t = end;
    while (v >= 100) {
        t -= 2;
        two_digits(t, v % 100);
        v /= 100;
    }
    if (v >= 10)
        two_digits(t - 2, v);
    else
        t[-1] = static_cast<char>('0' + v);
    return end;
}

}  // namespace detail

// Longest output of write(): 2^64 - 1 has 20 digits.
inline constexpr std::size_t kMaxDigits = 20;

// Writes v without leading zeros at d; returns the end. No terminating NUL.
[[gnu::always_inline]] inline char* write(char* d, uint64_t v) {
    constexpr uint64_t k1e8 = 100'000'000;
    if (v < k1e8) return detail::short_num(d, static_cast<uint32_t>(v));
    if (v < k1e8 * k1e8) {
        d = detail::short_num(d, static_cast<uint32_t>(v / k1e8));
        return detail::eight_digits(d, static_cast<uint32_t>(v % k1e8));
    }
    const uint64_t high = v / k1e8;
    d = detail::short_num(d, static_cast<uint32_t>(high / k1e8));
    d = detail::eight_digits(d, static_cast<uint32_t>(high % k1e8));
    return detail::eight_digits(d, static_cast<uint32_t>(v % k1e8));
}

}  // namespace insert::decimal

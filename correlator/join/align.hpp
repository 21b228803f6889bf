// One-to-one alignment of two ordered sequences with resynchronisation (docs/correlation.md
// section 4): work requests against wire messages, receive completions against SENDs. At
// the heads, an agreeing pair matches; otherwise the next agreeing pair within kLookahead
// items on either side is found (fewest skipped items first, then fewest skipped from the
// second sequence, then from the first) and what lies before it is left unmatched -
// never forced. Pure: the rule is unit-tested on its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace insert::correlate {

inline constexpr std::size_t kLookahead = 64;

struct AlignedPair {
    uint32_t a = 0;  // index in the first sequence
    uint32_t b = 0;  // index in the second
    bool resync = false;
};

struct Alignment {
    std::vector<AlignedPair> pairs;
    std::vector<uint32_t> unmatched_a;
    std::vector<uint32_t> unmatched_b;
};

// `agree(i, j)` says whether item i of the first sequence (n_a items) and item j of the
// second (n_b) agree.
template <typename Agree>
Alignment align(std::size_t n_a, std::size_t n_b, Agree&& agree) {
    Alignment out;
    std::size_t i = 0, j = 0;
    bool skipped = false;
    while (i < n_a && j < n_b) {
        if (agree(i, j)) {
            out.pairs.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(j), skipped});
            skipped = false;
            ++i;
            ++j;
            continue;
        }
        // Smallest a + b, then smallest b, then smallest a.
        bool found = false;
        std::size_t skip_a = 0, skip_b = 0;
        for (std::size_t total = 1; total <= 2 * kLookahead && !found; ++total) {
            for (std::size_t sb = 0; sb <= total && sb <= kLookahead; ++sb) {
                const std::size_t sa = total - sb;
                if (sa > kLookahead) continue;
                if (i + sa >= n_a || j + sb >= n_b) continue;
                if (agree(i + sa, j + sb)) {
                    found = true;
                    skip_a = sa;
                    skip_b = sb;
                    break;
                }
            }
        }
        if (!found) {
            skip_a = 1;
            skip_b = 1;
        }
        for (std::size_t k = 0; k < skip_a; ++k)
            out.unmatched_a.push_back(static_cast<uint32_t>(i + k));
        for (std::size_t k = 0; k < skip_b; ++k)
            out.unmatched_b.push_back(static_cast<uint32_t>(j + k));
        i += skip_a;
        j += skip_b;
        skipped = true;
    }
    for (; i < n_a; ++i) out.unmatched_a.push_back(static_cast<uint32_t>(i));
    for (; j < n_b; ++j) out.unmatched_b.push_back(static_cast<uint32_t>(j));
    return out;
}

}  // namespace insert::correlate

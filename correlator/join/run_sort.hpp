// Sorting what is nearly sorted already. The join sorts its records twice: each process's
// host records by time (order_by_process, after a counting sort has dealt them to their
// processes: sort_runs on a part of an array), and the matched messages by time for the
// e2e records (order_matches). Both arrive as a few long ascending runs - a tracer writes
// a process's calls in time order, the join yields each QP's messages in order - so
// finding the runs and merging them (O(n log runs)) replaces an O(n log n) sort that took
// a tenth of a run. Input without such runs goes to oneTBB's parallel_sort as before.
//
// The merges are stable; the result is the sorted order, the same as any sort's when
// `less` is a total order (order_matches' ends on a record index; order_by_process' on
// the records' whole content).
#pragma once

#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace insert::correlate {

// std::merge without a branch on its comparison (which run gives the next element is data a
// branch predictor cannot learn: runs of interleaved QPs and processes take turns). Alone it
// made no measurable difference to a run (docs/performance.md, "Presorted runs"): the merges
// of ~1,000 runs are ten passes over the keys, bound by memory more than by branches.
template <class T, class Less>
T* merge_runs(const T* a, const T* a_end, const T* b, const T* b_end, T* out, Less& less) {
    while (a != a_end && b != b_end) {
        const bool take_b = less(*b, *a);  // ties from the first run: a stable merge
        *out++ = *(take_b ? b : a);
        a += !take_b;
        b += take_b;
    }
    out = std::copy(a, a_end, out);
    return std::copy(b, b_end, out);
}

namespace run_sort_detail {

// The bounds of [data, data + n)'s ascending runs (0 first, n last); false when they are
// too many for merging to pay.
template <class T, class Less>
bool find_runs(const T* data, std::size_t n, std::vector<std::size_t>& bounds, Less& less) {
    // Runs shorter than this on average: a general sort is as quick.
    constexpr std::size_t kMinMeanRun = 64;
    bounds.assign(1, 0);
    for (std::size_t i = 1; i < n; ++i) {
        if (!less(data[i], data[i - 1])) continue;
        bounds.push_back(i);
        if (bounds.size() > n / kMinMeanRun) return false;
    }
    bounds.push_back(n);
    return true;
}

// Bottom-up: neighbouring runs merged pairwise, level by level, between data and buffer
// (n elements each). Returns which of the two holds the sorted result.
template <class T, class Less>
T* merge_levels(T* data, T* buffer, std::vector<std::size_t> bounds, Less& less) {
    T* from = data;
    T* to = buffer;
    const std::size_t n = bounds.back();
    while (bounds.size() > 2) {
        const std::size_t pairs = (bounds.size() - 1) / 2;
        std::vector<std::size_t> merged;
        merged.reserve(pairs + 2);
        for (std::size_t p = 0; p < pairs; ++p) merged.push_back(bounds[2 * p]);
        tbb::parallel_for(std::size_t{0}, pairs + (bounds.size() - 1) % 2, [&](std::size_t p) {
            const std::size_t first = bounds[2 * p];
            const std::size_t middle = bounds[std::min(2 * p + 1, bounds.size() - 1)];
            const std::size_t last = bounds[std::min(2 * p + 2, bounds.size() - 1)];
            merge_runs(from + first, from + middle, from + middle, from + last, to + first, less);
        });
        if ((bounds.size() - 1) % 2) merged.push_back(bounds[bounds.size() - 2]);  // odd run out
        merged.push_back(n);
        bounds = std::move(merged);
        std::swap(from, to);
    }
    return from;
}

}  // namespace run_sort_detail

template <class T, class Less>
void sort_runs(std::vector<T>& v, Less less) {
    std::vector<std::size_t> bounds;
    if (!run_sort_detail::find_runs(v.data(), v.size(), bounds, less)) {
        tbb::parallel_sort(v.begin(), v.end(), less);
        return;
    }
    std::vector<T> buffer(v.size());
    if (run_sort_detail::merge_levels(v.data(), buffer.data(), std::move(bounds), less) != v.data())
        v.swap(buffer);
}

// The same for a part of an array, [first, last).
template <class T, class Less>
void sort_runs(T* first, T* last, Less less) {
    const auto n = static_cast<std::size_t>(last - first);
    std::vector<std::size_t> bounds;
    if (!run_sort_detail::find_runs(first, n, bounds, less)) {
        tbb::parallel_sort(first, last, less);
        return;
    }
    if (bounds.size() <= 2) return;  // one run: sorted
    std::vector<T> buffer(n);
    const T* sorted = run_sort_detail::merge_levels(first, buffer.data(), std::move(bounds), less);
    if (sorted != first) std::copy(sorted, sorted + n, first);
}

}  // namespace insert::correlate

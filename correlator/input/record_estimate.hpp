// How many records of each kind a run's inputs hold, estimated before the ingest from the
// first lines of each regular file, so that the parsing threads can reserve their record
// arrays once (ingest.cpp). A vector that grows copies what it holds into fresh memory;
// an estimate far above the truth asks the hugetlb pool for more than it can give
// (huge_allocator.hpp). Standard input and pipes add nothing: their arrays grow.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace insert::correlate {

struct RecordEstimate {
    uint64_t msgs = 0;
    uint64_t qps = 0;
    uint64_t events = 0;
};

// Parses up to kEstimateSampleBytes of whole lines at the start of each regular file and
// scales the counts of each kind to the file's size, with a quarter more for the error of
// the sample. Unreadable inputs add nothing (the ingest reports them).
inline constexpr std::size_t kEstimateSampleBytes = 64 * 1024;
RecordEstimate estimate_records(const std::vector<std::string>& inputs);

}  // namespace insert::correlate

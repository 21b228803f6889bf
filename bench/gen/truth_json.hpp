// Writes the ground truth as one JSON document (docs/insert-gen.md "Truth file"): SPEC 7
// `msg` records, final `qp` records and the `summary`, one record per line.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/gen/json_out.hpp"
#include "bench/gen/output_file.hpp"
#include "bench/gen/truth.hpp"

namespace insert::gen {

struct TruthFileInfo {
    std::string scenario;
    uint64_t seed = 0;
};

// Nearest-rank percentile (SPEC 7): the smallest value with at least p% at or below it.
uint64_t nearest_rank(const std::vector<uint64_t>& sorted, unsigned percent);

// The truth file, written front to back: the header at open(), each `msg` record as it is
// handed over (as a TruthMsgSink it takes them while the simulation runs, so that a large
// run neither keeps its half a million records nor formats them after the simulation),
// then the `qp` records and the summary at finish(), after TruthObserver::finish().
class TruthJsonWriter : public TruthMsgSink {
  public:
    explicit TruthJsonWriter(const Scenario& scenario);
    ~TruthJsonWriter() override;  // an unfinished file is removed
    TruthJsonWriter(const TruthJsonWriter&) = delete;
    TruthJsonWriter& operator=(const TruthJsonWriter&) = delete;

    bool open(const std::string& path, const TruthFileInfo& info, std::string& error);
    void on_msg(const TruthMsg& m) override;
    // Every record written is also handed to `tap` (the host traces' e2e truth needs them).
    void set_tap(TruthMsgSink* tap) { tap_ = tap; }
    // Writes the rest and closes; false with `error` (and no file left) if any write failed.
    bool finish(const TruthObserver& truth, std::string& error);

  private:
    // Below this many qp records one thread formats them all.
    static constexpr std::size_t kParallelQps = 4096;

    void abandon();
    std::vector<uint32_t> qp_order(const TruthObserver& truth) const;
    void write_qps(JsonOut& w, const TruthObserver& truth, const std::vector<uint32_t>& order,
                   std::size_t begin, std::size_t end) const;
    void write_qps_interleaved(JsonOut& out, const TruthObserver& truth,
                               const std::vector<uint32_t>& order) const;

    const Scenario& sc_;
    // Host addresses, op and status names as JSON strings ready to copy (json_out.hpp).
    std::vector<PaddedString> host_str_;
    std::vector<PaddedString> op_str_, status_str_;
    TimestampHigh ts_;  // on_msg()'s
    std::string path_;
    OutputFile file_;
    std::FILE* f_ = nullptr;
    std::unique_ptr<JsonOut> w_;
    uint64_t msgs_ = 0;
    TruthMsgSink* tap_ = nullptr;
};

// The whole file from an observer that kept its msg records (no TruthMsgSink set).
bool write_truth_json(const Scenario& scenario, const TruthObserver& truth,
                      const TruthFileInfo& info, const std::string& path, std::string& error);

}  // namespace insert::gen

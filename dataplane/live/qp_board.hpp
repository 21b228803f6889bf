// Top QPs for live stats (/insert/top_qps, the terminal view) without touching the engine:
// a RecordSink decorator in front of each worker's record ring sees every `qp` record the
// engine emits (--interval reports and finals) and keeps that worker's K busiest endpoints
// by bytes; readers on other threads copy the board under a seqlock (never block the worker).
// The engine, worker and exporter stay as they are: the decorator is handed to the engine
// through the pipeline's EngineFactory.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/state/engine.hpp"
#include "dataplane/state/records.hpp"

namespace insert::live {

class QpBoard {
  public:
    static constexpr std::size_t kTop = 16;
    struct Entry {
        state::QpRecord qp;
        bool used = false;
    };
    // Worker side: one qp record.
    void offer(const state::QpRecord& qp) noexcept;
    // Any thread: a consistent copy of the used entries.
    std::vector<state::QpRecord> snapshot() const;

  private:
    std::atomic<uint64_t> seq_{0};
    std::array<Entry, kTop> entries_{};
};

// The sink decorator: forwards every record to the ring, offers qp records to the board.
class BoardSink final : public state::RecordSink {
  public:
    bool push(const state::Record& r) override {
        if (r.type == state::RecordType::qp) board.offer(r.qp);
        return inner->push(r);
    }
    state::RecordSink* inner = nullptr;
    QpBoard board;
};

// One board per worker: factory() makes the engines of a Pipeline (EngineFactory), each
// with its worker's record sink wrapped in that worker's BoardSink.
class QpBoards {
  public:
    explicit QpBoards(unsigned workers);
    // Engines for workers 0, 1, ... in the order Pipeline::create() asks for them; the
    // boards must outlive the engines.
    std::function<std::unique_ptr<state::Engine>(const state::EngineConfig&, state::RecordSink&,
                                                 std::string&)>
    factory();
    // The K busiest endpoints over every worker, by bytes.
    std::vector<state::QpRecord> top(std::size_t k) const;

  private:
    std::vector<std::unique_ptr<BoardSink>> sinks_;
};

}  // namespace insert::live

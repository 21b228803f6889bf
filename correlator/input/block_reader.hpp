// Cuts the inputs, one after the other, into blocks of whole lines for the parallel
// parsers (ingest.cpp). A regular file is mapped and its blocks are views into the mapping:
// reading it into buffers was a copy of every byte by the kernel, a tenth of a run's time.
// Standard input, pipes and sockets are read into buffers.
//
// A mapped file that shrinks while it is read (truncated by another program) would raise
// SIGBUS; the mapping is guarded (dataplane/capture/mapping_guard.hpp): the pages that are
// gone read as zeros, and the reader stops with an error naming the file.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "correlator/input/ingest.hpp"

namespace insert::correlate {

struct Block {
    // The block's bytes, followed by SIMDJSON_PADDING readable bytes: in `owned`, or in a
    // file's mapping (then the next lines, or the copy of the file's last block).
    const char* text = nullptr;
    std::unique_ptr<char[]> owned;
    std::size_t size = 0;  // bytes of whole lines (plus an unterminated last line)
    bool mapped = false;
    uint32_t input = 0;
    uint64_t lines = 0;  // walked by the parser; bad lines are numbered from 1 until then
    bool last_unterminated = false;
    IngestCounts counts;
    std::vector<BadLine> bad;

    // After parsing: a mapped block's pages are unmapped from the process (they stay in
    // the page cache), so that a run's resident memory does not grow by its inputs' size.
    void release();
};

class BlockReader {
  public:
    BlockReader(const std::vector<std::string>& inputs, std::string& error);
    ~BlockReader();  // unmaps the inputs: only after every block is parsed
    BlockReader(const BlockReader&) = delete;
    BlockReader& operator=(const BlockReader&) = delete;

    // nullptr at the end of the last input, or on an error (error set).
    Block* next();
    uint64_t bytes() const { return bytes_; }
    // Checked after the parse: a guarded mapping lost pages while its blocks were parsed.
    bool check_shrunk();

  private:
    struct Mapping {
        const char* base = nullptr;
        std::size_t size = 0;
        std::size_t input = 0;
        std::unique_ptr<std::atomic<bool>> shrunk;  // raised by the SIGBUS guard
    };
    bool open_next();
    void close_current();
    Block* next_mapped();
    Block* next_read();
    bool fail_shrunk(const Mapping& m);

    const std::vector<std::string>& inputs_;
    std::string& error_;
    std::size_t next_input_ = 0;
    std::size_t index_ = 0;
    int fd_ = -1;
    uint64_t bytes_ = 0;
    std::string carry_;  // read path: the bytes after a block's last newline
    std::vector<Mapping> mappings_;
    bool mapped_ = false;  // the current input is mappings_.back()
    std::size_t map_pos_ = 0;
};

}  // namespace insert::correlate

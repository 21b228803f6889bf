// A buffered JSON emitter for the truth file's fixed-shape records.
//
// The `large` scenario writes a quarter-gigabyte truth file; format-string parsing per
// field cost more than the whole simulation, and std::string appends (a capacity check and
// call per piece) still made this writer a third of the generator's instructions
// (callgrind), so pieces are copied into a flat buffer and written out in blocks. A record
// reserves room for its longest possible form once; keys, numbers and short strings inside
// it are then appended without a bounds check each, through a JsonCursor.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "bench/gen/huge_vector.hpp"
#include "bench/gen/output_file.hpp"
#include "dataplane/common/json_cursor.hpp"

namespace insert::gen {

// Records are written with the project's JSON cursor (JsonCursor, PaddedString,
// TimestampHigh: dataplane/common/json_cursor.hpp), as the dataplane's exporter writes its own.

// The buffer and where it goes: a file, or memory (part of a file formatted by another
// thread). Blocks of 256 KiB: with the simulator on the same core (--threads 1), 1 MiB
// blocks of pcap and truth streaming through a 1 MiB L2 evicted its state (~8% more CPU).
class JsonOut {
  public:
    // `file`: the OutputFile behind `f`, told how far the writes have come.
    JsonOut(std::FILE* f, OutputFile& file)
        : f_(f), file_(&file), buf_(new char[kBufBytes]), p_(buf_.get()) {}
    explicit JsonOut(HugeVector<char>& mem)
        : mem_(&mem), buf_(new char[kBufBytes]), p_(buf_.get()) {}

    // Any length, outside records.
    JsonOut& raw(std::string_view s) {
        if (s.size() > kBufBytes - kMaxRecord) {  // longer than the buffer: write through
            flush();
            put(s.data(), s.size());
            return *this;
        }
        room(s.size());
        std::memcpy(p_, s.data(), s.size());
        p_ += s.size();
        return *this;
    }
    // Any length, outside records, written without a copy into the buffer (what is in it
    // goes first).
    JsonOut& raw_through(std::string_view s) {
        flush();
        if (!s.empty()) put(s.data(), s.size());
        return *this;
    }
    // Room for the longest record (a qp record is under 1.5 KB: ~35 keys, numbers of at
    // most 20 digits, two addresses of at most 45 characters): format it with the cursor,
    // then commit() it.
    JsonCursor reserve() {
        room(kMaxRecord);
        return JsonCursor(p_);
    }
    void commit(const JsonCursor& c) {
        p_ = c.pos();
        if (used() >= kFlushBytes) flush();
    }
    bool flush() {
        const std::size_t n = used();
        if (n) put(buf_.get(), n);
        p_ = buf_.get();
        return ok_;
    }
    // What is formatted but not flushed yet, and dropping it (the owner copied it
    // elsewhere): a chunk formatted in memory is handed over without a copy to `mem`.
    std::string_view pending() const { return {buf_.get(), used()}; }
    void discard() { p_ = buf_.get(); }
    // After the last flush(): the file is complete (OutputFile::finish()).
    bool finish_file() {
        if (!f_ || !ok_) return ok_;
        ok_ = std::fflush(f_) == 0 && file_->finish(written_);
        return ok_;
    }

  private:
    static constexpr std::size_t kFlushBytes = 1 << 18;
    static constexpr std::size_t kMaxRecord = 4096;
    static constexpr std::size_t kBufBytes = kFlushBytes + kMaxRecord;
    std::size_t used() const { return static_cast<std::size_t>(p_ - buf_.get()); }
    void room(std::size_t n) {
        if (kBufBytes - used() < n) flush();
    }
    void put(const char* data, std::size_t n) {
        if (mem_) {
            mem_->insert(mem_->end(), data, data + n);
            return;
        }
        // stdio writes whole buffers of st_blksize (4 KiB) or multiples of it: whole pages.
        written_ += n;
        file_->ahead(written_);
        if (std::fwrite(data, 1, n, f_) != n) ok_ = false;
    }

    std::FILE* f_ = nullptr;
    OutputFile* file_ = nullptr;
    uint64_t written_ = 0;  // bytes handed to f_
    HugeVector<char>* mem_ = nullptr;
    std::unique_ptr<char[]> buf_;
    char* p_;
    bool ok_ = true;
};

}  // namespace insert::gen

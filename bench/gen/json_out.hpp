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
#include <optional>
#include <string_view>
#include <vector>

#include "bench/gen/huge_vector.hpp"
#include "bench/gen/output_file.hpp"
#include "dataplane/export/decimal.hpp"

namespace insert::gen {

// A JSON string value of up to 46 characters with its quotes (addresses, names), padded so
// that it can be copied whole: a fixed-size copy is a few vector moves, where a copy of
// its own length was a call to memcpy (four per msg record).
struct PaddedString {
    static constexpr std::size_t kMax = 46;
    char chars[kMax + 2] = {};
    uint8_t len = 0;
    // `s` must not be longer than kMax.
    explicit PaddedString(std::string_view s = {}) : len(static_cast<uint8_t>(s.size() + 2)) {
        chars[0] = '"';
        std::memcpy(chars + 1, s.data(), s.size());
        chars[s.size() + 1] = '"';
    }
};

// The leading digits of nanosecond timestamps (all but the last eight) as last written:
// the timestamps of a record, and of records in a row, mostly share them.
struct TimestampHigh {
    uint64_t high = ~uint64_t{0};
    char digits[16];  // at most 12 (2^64 / 10^8 < 10^12), padded for a fixed-size copy
    uint8_t len = 0;
};

// Appends the pieces of one record at a position inside JsonOut's buffer. It lives in a
// local variable while the record is formatted, so that its position stays in a register:
// kept in a longer-lived object, the position had to be reloaded and stored around every
// piece (a char store may alias anything), which made a record ~2x as expensive.
class JsonCursor {
  public:
    explicit JsonCursor(char* p) : p_(p) {}
    char* pos() const { return p_; }

    // Decimal digits in 8-digit chunks (dataplane/export/decimal.hpp, shared with the
    // dataplane's exporter): most numbers are 19-digit nanosecond timestamps.
    [[gnu::always_inline]] JsonCursor& num(uint64_t v) {
        p_ = decimal::write(p_, v);
        return *this;
    }
    // decimal::write(v), reusing the digits of `v / 10^8` when they are those of `cache`.
    [[gnu::always_inline]] JsonCursor& timestamp(uint64_t v, TimestampHigh& cache) {
        constexpr uint64_t k1e8 = 100'000'000;
        if (v < k1e8) return num(v);
        const uint64_t high = v / k1e8;
        if (high != cache.high) {
            cache.high = high;
            cache.len = static_cast<uint8_t>(decimal::write(cache.digits, high) - cache.digits);
        }
        std::memcpy(p_, cache.digits, sizeof cache.digits);
        p_ = decimal::detail::eight_digits(p_ + cache.len, static_cast<uint32_t>(v % k1e8));
        return *this;
    }
    [[gnu::always_inline]] JsonCursor& padded(const PaddedString& s) {
        std::memcpy(p_, s.chars, sizeof s.chars);
        p_ += s.len;
        return *this;
    }
    // A string literal: its length is a compile-time constant, so the copy is a few moves
    // instead of a memcpy call.
    template <std::size_t N>
    [[gnu::always_inline]] JsonCursor& lit(const char (&s)[N]) {
        static_assert(N <= kMaxPiece);
        std::memcpy(p_, s, N - 1);
        p_ += N - 1;
        return *this;
    }
    // A short string (addresses, names: within the record's reserved room).
    [[gnu::always_inline]] JsonCursor& str(std::string_view s) {
        std::memcpy(p_, s.data(), s.size());
        p_ += s.size();
        return *this;
    }
    // `,"key":` (first: no comma).
    template <std::size_t N>
    [[gnu::always_inline]] JsonCursor& key(const char (&k)[N], bool first = false) {
        static_assert(N + 3 <= kMaxPiece);
        if (!first) *p_++ = ',';
        *p_++ = '"';
        std::memcpy(p_, k, N - 1);
        p_ += N - 1;
        *p_++ = '"';
        *p_++ = ':';
        return *this;
    }
    template <std::size_t N>
    [[gnu::always_inline]] JsonCursor& field(const char (&k)[N], uint64_t v) {
        return key(k).num(v);
    }
    template <std::size_t N>
    [[gnu::always_inline]] JsonCursor& field_str(const char (&k)[N], std::string_view v) {
        return key(k).lit("\"").str(v).lit("\"");
    }
    template <std::size_t N, typename T>
    [[gnu::always_inline]] JsonCursor& field_opt(const char (&k)[N], const std::optional<T>& v) {
        key(k);
        return v ? num(*v) : lit("null");
    }

    static constexpr std::size_t kMaxPiece = 64;  // longest literal

  private:
    char* p_;
};

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

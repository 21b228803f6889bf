#include "correlator/input/block_reader.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "dataplane/capture/mapping_guard.hpp"

namespace insert::correlate {

namespace {

// Blocks of ~1 MiB: large enough that a parser thread's work dwarfs the hand-off, small
// enough that 2 per thread in flight stay in cache-friendly memory.
constexpr std::size_t kBlockBytes = 1 << 20;
constexpr std::size_t kPadding = simdjson::SIMDJSON_PADDING;

std::size_t page_size() {
    static const auto size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    return size;
}

}  // namespace

void Block::release() {
    owned.reset();
    if (!mapped) return;
    // Only the pages wholly inside the block: its neighbours share the partial ones.
    const std::size_t page = page_size();
    const auto first = (reinterpret_cast<uintptr_t>(text) + page - 1) & ~(page - 1);
    const auto last = (reinterpret_cast<uintptr_t>(text) + size) & ~(page - 1);
    if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

BlockReader::BlockReader(const std::vector<std::string>& inputs, std::string& error)
    : inputs_(inputs), error_(error) {}

BlockReader::~BlockReader() {
    close_current();
    for (Mapping& m : mappings_) {
        capture::unguard_mapping(m.base);
        ::munmap(const_cast<char*>(m.base), m.size);
    }
}

Block* BlockReader::next() {
    while (true) {
        if (!mapped_ && fd_ < 0 && !open_next()) return nullptr;
        Block* block = mapped_ ? next_mapped() : next_read();
        if (block || !error_.empty()) return block;
        // The input ended without another block: the next one.
    }
}

bool BlockReader::open_next() {
    if (next_input_ >= inputs_.size()) return false;
    index_ = next_input_++;
    const std::string& name = inputs_[index_];
    fd_ = name == "-" ? 0 : ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
        error_ = name + ": " + std::strerror(errno);
        return false;
    }
    struct stat st {};
    if (fd_ == 0 || ::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
        return true;  // read into buffers
    const auto size = static_cast<std::size_t>(st.st_size);
    void* base = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd_, 0);
    if (base == MAP_FAILED) return true;
    Mapping m{static_cast<const char*>(base), size, index_,
              std::make_unique<std::atomic<bool>>(false)};
    // The guard has a few slots for the whole process: inputs beyond them are read.
    if (!capture::guard_mapping(base, size, m.shrunk.get())) {
        ::munmap(base, size);
        return true;
    }
    // No MADV_SEQUENTIAL: it lets the kernel drop the pages once read, and the next run
    // over the same file (the usual way to work) then read it from disk again.
    mappings_.push_back(std::move(m));
    close_current();  // the mapping stays valid without its descriptor
    mapped_ = true;
    map_pos_ = 0;
    return true;
}

void BlockReader::close_current() {
    if (fd_ > 0) ::close(fd_);
    fd_ = -1;
}

bool BlockReader::fail_shrunk(const Mapping& m) {
    error_ = inputs_[m.input] + ": the file shrank while it was read";
    return false;
}

bool BlockReader::check_shrunk() {
    for (const Mapping& m : mappings_)
        if (m.shrunk->load(std::memory_order_acquire)) return fail_shrunk(m);
    return true;
}

Block* BlockReader::next_mapped() {
    const Mapping& m = mappings_.back();
    if (m.shrunk->load(std::memory_order_acquire)) {
        fail_shrunk(m);
        return nullptr;
    }
    if (map_pos_ == m.size) {
        mapped_ = false;
        return nullptr;
    }
    const char* start = m.base + map_pos_;
    const std::size_t rest = m.size - map_pos_;
    std::size_t len = std::min(kBlockBytes, rest);
    if (len < rest) {  // end at the block's last newline; a longer line: at its own end
        if (const auto* last = static_cast<const char*>(memrchr(start, '\n', len))) {
            len = static_cast<std::size_t>(last - start) + 1;
        } else {
            const auto* nl = static_cast<const char*>(std::memchr(start + len, '\n', rest - len));
            len = nl ? static_cast<std::size_t>(nl - start) + 1 : rest;
        }
    }
    auto block = std::make_unique<Block>();
    block->size = len;
    block->input = static_cast<uint32_t>(index_);
    block->last_unterminated = len == rest && start[len - 1] != '\n';
    if (rest - len >= kPadding) {  // the file's next bytes are the padding
        block->text = start;
        block->mapped = true;
    } else {  // the end of the file: a copy with zeros after it
        block->owned.reset(new char[len + kPadding]);
        std::memcpy(block->owned.get(), start, len);
        std::memset(block->owned.get() + len, 0, kPadding);
        block->text = block->owned.get();
    }
    map_pos_ += len;
    bytes_ += len;
    return block.release();
}

Block* BlockReader::next_read() {
    auto block = std::make_unique<Block>();
    std::size_t capacity = std::max(kBlockBytes, carry_.size() * 2);
    block->owned.reset(new char[capacity + kPadding]);
    std::memcpy(block->owned.get(), carry_.data(), carry_.size());
    std::size_t size = carry_.size();
    carry_.clear();
    bool eof = false;
    while (size < capacity) {
        const ssize_t n = ::read(fd_, block->owned.get() + size, capacity - size);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            error_ = inputs_[index_] + ": " + std::strerror(errno);
            return nullptr;
        }
        if (n == 0) {
            eof = true;
            break;
        }
        size += static_cast<std::size_t>(n);
        bytes_ += static_cast<std::size_t>(n);
        // A line longer than the block: grow it (the pipe may hold more).
        if (size == capacity && !std::memchr(block->owned.get(), '\n', size)) {
            auto bigger = std::make_unique<char[]>(capacity * 2 + kPadding);
            std::memcpy(bigger.get(), block->owned.get(), size);
            block->owned = std::move(bigger);
            capacity *= 2;
        }
    }
    char* data = block->owned.get();
    std::size_t whole = size;
    if (!eof) {
        const char* last = static_cast<const char*>(memrchr(data, '\n', size));
        whole = last ? static_cast<std::size_t>(last - data) + 1 : 0;
        carry_.assign(data + whole, size - whole);
    }
    block->text = data;
    block->size = whole;
    block->input = static_cast<uint32_t>(index_);
    block->last_unterminated = eof && whole > 0 && data[whole - 1] != '\n';
    std::memset(data + whole, 0, kPadding);
    if (eof) close_current();
    if (whole == 0 && eof) return nullptr;  // an empty input, or one ending in a newline
    return block.release();
}

}  // namespace insert::correlate

// Survives a capture file that shrinks while it is mapped (truncated by another program,
// or opened for writing with O_TRUNC - `insert-dp replay X --records X` did that): reading
// a page past the new end of a file mapping raises SIGBUS, which kills the process. A
// guarded mapping instead gets zero pages mapped over the page that faulted, and its flag
// is raised; the reader checks the flag and stops with an error naming the file. Any
// thread may fault (replay workers read frames in place), so this is process-wide.
#pragma once

#include <atomic>
#include <cstddef>

namespace insert::capture {

// Guards [base, base + size) until unguard_mapping(base): a SIGBUS inside it sets *shrunk.
// False when all guard slots (8) are taken: the mapping is then unguarded.
bool guard_mapping(const void* base, std::size_t size, std::atomic<bool>* shrunk);
void unguard_mapping(const void* base);

}  // namespace insert::capture

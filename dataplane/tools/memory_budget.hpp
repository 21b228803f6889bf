// Checking up front that the memory a run is configured for exists. `--max-endpoints
// 268435456` or `bench --endpoints 16777216` are in range, but their tables do not fit in
// this machine: without a check a replay ran the host out of memory, and a live appliance
// locked nearly all of it. Commands compute what they will need (state::Engine::
// memory_bytes and their own buffers) and refuse with one line when it is not there.
#pragma once

#include <cstdint>
#include <string>

namespace insert::tools {

// Memory this process can still get: MemAvailable, lowered to what its cgroup allows.
uint64_t available_memory_bytes();

// Whether `need` bytes fit in `available`; `resident` memory (locked by a live appliance)
// must also leave the system room to work: max(512 MiB, 1/8 of what is available).
bool memory_fits(uint64_t need, uint64_t available, bool resident);

// "N.N GiB" / "N MiB".
std::string format_bytes(uint64_t bytes);

}  // namespace insert::tools

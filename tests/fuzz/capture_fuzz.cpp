// libFuzzer target for the capture reader: every input is a whole pcap/pcapng file. The
// reader must never read outside the mapping, never loop forever, and every frame it hands
// out must lie inside the file.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "dataplane/capture/capture_file.hpp"
#include "dataplane/proto/parser.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    // An anonymous in-memory file: no disk traffic, and mmap works on it as on a capture.
    static const int fd = memfd_create("capture_fuzz", MFD_CLOEXEC);
    if (fd < 0) std::abort();
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size))
        std::abort();
    insert::capture::CaptureFile file;
    if (!file.open("/proc/self/fd/" + std::to_string(fd))) return 0;
    insert::capture::Frame frame;
    uint64_t frames = 0;
    insert::proto::ParsedPacket parsed;
    while (file.next(frame)) {
        ++frames;
        if (frame.index != frames) std::abort();
        // Each frame consumes at least a record/block header, so this bounds the loop.
        if (frames > size) std::abort();
        insert::proto::parse_frame(frame.data, parsed);
    }
    if (file.truncated() && file.error().empty()) std::abort();
    return 0;
}

// A JSON Lines output file written through JsonOut (json_out.hpp) and OutputFile (overwritten
// in place, like the pcap and the truth file): the host traces and the e2e truth. An
// unfinished file is removed, so a failed run leaves nothing half-written.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "bench/gen/json_out.hpp"
#include "bench/gen/output_file.hpp"

namespace insert::gen {

class JsonLinesFile {
  public:
    JsonLinesFile() = default;
    JsonLinesFile(const JsonLinesFile&) = delete;
    JsonLinesFile& operator=(const JsonLinesFile&) = delete;
    ~JsonLinesFile() {
        if (f_) {
            std::fclose(f_);
            std::remove(path_.c_str());
        }
    }

    bool open(const std::string& path, std::string& error) {
        path_ = path;
        const int fd = file_.open(path, 0666);
        f_ = fd >= 0 ? ::fdopen(fd, "wb") : nullptr;
        if (!f_) {
            error = path + ": " + std::strerror(errno);
            if (fd >= 0) ::close(fd);
            return false;
        }
        out_ = std::make_unique<JsonOut>(f_, file_);
        return true;
    }
    JsonOut& out() { return *out_; }
    // Flushes and closes; false with `error` (and the file removed) if any write failed.
    bool finish(std::string& error) {
        const bool ok = out_->flush() && out_->finish_file();
        const bool closed = std::fclose(f_) == 0;
        f_ = nullptr;
        if (ok && closed) return true;
        error = path_ + ": write failed";
        std::remove(path_.c_str());
        return false;
    }

  private:
    std::string path_;
    OutputFile file_;
    std::FILE* f_ = nullptr;
    std::unique_ptr<JsonOut> out_;
};

}  // namespace insert::gen

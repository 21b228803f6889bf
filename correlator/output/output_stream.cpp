#include "correlator/output/output_stream.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <csignal>
#include <cstring>

namespace insert::correlate {

OutputStream::~OutputStream() {
    if (file_ && file_ != stdout) std::fclose(file_);
}

bool OutputStream::open(const std::string& path, const std::vector<std::string>& inputs,
                        std::string& error) {
    path_ = path;
    if (path == "-") {
        // EPIPE as an error code instead of a signal that kills the process mid-line.
        std::signal(SIGPIPE, SIG_IGN);
        file_ = stdout;
        return true;
    }
    struct stat out_st {};
    if (::stat(path.c_str(), &out_st) == 0) {
        for (const std::string& in : inputs) {
            struct stat in_st {};
            const int rc = in == "-" ? ::fstat(0, &in_st) : ::stat(in.c_str(), &in_st);
            if (rc == 0 && in_st.st_dev == out_st.st_dev && in_st.st_ino == out_st.st_ino &&
                S_ISREG(out_st.st_mode)) {
                error =
                    "--records " + path + ": is the input " + in + " (refusing to overwrite it)";
                return false;
            }
        }
    }
    std::signal(SIGPIPE, SIG_IGN);
    file_ = std::fopen(path.c_str(), "w");
    if (!file_) {
        error = "--records " + path + ": " + std::strerror(errno);
        return false;
    }
    return true;
}

bool OutputStream::write(std::string_view text) {
    if (!file_ || reader_gone_) return !reader_gone_ && error_.empty();
    if (std::fwrite(text.data(), 1, text.size(), file_) != text.size()) {
        if (errno == EPIPE) {
            reader_gone_ = true;
            return false;
        }
        error_ =
            (path_ == "-" ? std::string("standard output") : path_) + ": " + std::strerror(errno);
        return false;
    }
    return true;
}

bool OutputStream::reopen(std::string& error) {
    if (!file_ || file_ == stdout) {
        error = file_ ? "is standard output" : "is not open";
        return false;
    }
    if (std::fflush(file_) != 0 && error_.empty()) error_ = path_ + ": " + std::strerror(errno);
    std::FILE* fresh = std::fopen(path_.c_str(), "a");
    if (!fresh) {
        error = path_ + ": " + std::strerror(errno);
        return false;
    }
    if (std::fclose(file_) != 0 && error_.empty()) error_ = path_ + ": " + std::strerror(errno);
    file_ = fresh;
    return true;
}

bool OutputStream::close() {
    if (!file_) return error_.empty();
    const bool flushed = std::fflush(file_) == 0;
    if (!flushed && !reader_gone_) {
        if (errno == EPIPE)
            reader_gone_ = true;
        else if (error_.empty())
            error_ = (path_ == "-" ? std::string("standard output") : path_) + ": " +
                     std::strerror(errno);
    }
    if (file_ != stdout && std::fclose(file_) != 0 && error_.empty())
        error_ = path_ + ": " + std::strerror(errno);
    file_ = nullptr;
    return error_.empty();
}

}  // namespace insert::correlate

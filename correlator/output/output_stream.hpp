// Where the records go: a file (opened only once the inputs were read, so that a failed
// run leaves an existing file alone, and refused when it is one of the inputs) or
// standard output. A reader that goes away (EPIPE: `| head`) ends the output quietly;
// any other write error (a full disk, /dev/full) is reported. SIGHUP reopens a file
// (reopen()).
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace insert::correlate {

class OutputStream {
  public:
    OutputStream() = default;
    OutputStream(const OutputStream&) = delete;
    OutputStream& operator=(const OutputStream&) = delete;
    ~OutputStream();

    // Refuses a path that names one of `inputs` (same file, through links too).
    bool open(const std::string& path, const std::vector<std::string>& inputs, std::string& error);
    bool is_open() const { return file_ != nullptr; }
    bool to_stdout() const { return file_ == stdout; }

    // Appends; false after a write error (error() says which).
    bool write(std::string_view text);
    bool close();
    // SIGHUP (logrotate moved the file): what is written goes on in a file opened anew at
    // the same path, appended to if it is still there. False with `error` for standard
    // output or when the path cannot be opened; the records then go on to the open file.
    bool reopen(std::string& error);
    bool reader_gone() const { return reader_gone_; }
    const std::string& error() const { return error_; }

  private:
    std::FILE* file_ = nullptr;
    std::string path_;
    std::string error_;
    bool reader_gone_ = false;
};

}  // namespace insert::correlate

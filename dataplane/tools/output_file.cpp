#include "dataplane/tools/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace insert::tools {

namespace {

bool same_file(const struct stat& a, const std::string& input) {
    struct stat b {};
    return !input.empty() && ::stat(input.c_str(), &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

std::string refuse_input(const std::string& option, const std::string& path,
                         const std::string& input) {
    return option + " " + path + " is the input " + input + ": refusing to overwrite it";
}

}  // namespace

bool check_output(const std::string& option, const std::string& path, const std::string& input,
                  std::string& error) {
    if (path.empty()) {
        error = option + " needs a file name (or - for stdout), not an empty string";
        return false;
    }
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
        if (same_file(st, input)) {
            error = refuse_input(option, path, input);
            return false;
        }
        if (S_ISDIR(st.st_mode)) {
            error = "cannot write " + option + " " + path + ": it is a directory";
            return false;
        }
        if (::access(path.c_str(), W_OK) != 0) {
            error = "cannot write " + option + " " + path + ": " + std::strerror(errno);
            return false;
        }
        return true;
    }
    if (errno != ENOENT) {
        error = "cannot write " + option + " " + path + ": " + std::strerror(errno);
        return false;
    }
    // A new file: its directory must exist and take it.
    const std::size_t slash = path.find_last_of('/');
    const std::string dir = slash == std::string::npos ? "."
                            : slash == 0               ? "/"
                                                       : path.substr(0, slash);
    if (::access(dir.c_str(), W_OK | X_OK) != 0) {
        error = "cannot write " + option + " " + path + ": " + std::strerror(errno);
        return false;
    }
    return true;
}

std::FILE* open_output(const std::string& option, const std::string& path, const std::string& input,
                       std::string& error) {
    // No O_TRUNC: the file is truncated below, once fstat() has shown it is not the input
    // (a check by name before the open could be raced).
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) {
        error = "cannot write " + option + " " + path + ": " + std::strerror(errno);
        return nullptr;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || same_file(st, input)) {
        ::close(fd);
        error = refuse_input(option, path, input);
        return nullptr;
    }
    if (S_ISREG(st.st_mode) && ::ftruncate(fd, 0) != 0) {
        error = "cannot write " + option + " " + path + ": " + std::strerror(errno);
        ::close(fd);
        return nullptr;
    }
    std::FILE* f = ::fdopen(fd, "w");
    if (!f) {
        error = "cannot write " + option + " " + path + ": " + std::strerror(errno);
        ::close(fd);
    }
    return f;
}

}  // namespace insert::tools

#include "correlator/report/report_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "correlator/report/html_text.hpp"

namespace insert::correlate::report {

namespace {

constexpr const char* kDebianChartJs[] = {
    "/usr/share/javascript/chart.js/chart.umd.min.js",  // Chart.js 4 packages
    "/usr/share/javascript/chart.js/chart.min.js",      // Debian 12: Chart.js 3.9
};

}  // namespace

bool load_chart_library(const std::string& path, std::string& text, std::string& error) {
    std::string chosen = path;
    if (chosen.empty()) {
        const char* env = std::getenv("INSERT_CHARTJS");
        if (env && *env) chosen = env;
    }
    if (chosen.empty()) {
        for (const char* candidate : kDebianChartJs)
            if (::access(candidate, R_OK) == 0) {
                chosen = candidate;
                break;
            }
        if (chosen.empty()) {
            error = std::string("chart library: no ") + kDebianChartJs[1] +
                    " (install the Debian package libjs-chart.js: scripts/setup.sh)";
            return false;
        }
    }
    std::ifstream in(chosen, std::ios::binary);
    if (!in) {
        error = "chart library " + chosen + ": " + std::strerror(errno);
        return false;
    }
    std::ostringstream all;
    all << in.rdbuf();
    text = all.str();
    // The UMD build defines the global `Chart`; anything else is the wrong file.
    if (text.find("Chart") == std::string::npos || text.size() < 1000) {
        error = "chart library " + chosen + ": not Chart.js's UMD build";
        return false;
    }
    text = inline_script_text(std::move(text));
    return true;
}

bool check_report_path(const std::string& option, const std::string& path,
                       const std::vector<std::pair<std::string, std::string>>& others,
                       std::string& error) {
    if (path.empty()) {
        error = option + ": empty path";
        return false;
    }
    struct stat out_st {};
    const bool exists = ::stat(path.c_str(), &out_st) == 0;
    if (exists && S_ISDIR(out_st.st_mode)) {
        error = option + " " + path + ": is a directory";
        return false;
    }
    // The page is written next to its path and renamed into place: the directory must
    // exist and take a new file, checked before any input is read.
    const std::size_t slash = path.find_last_of('/');
    const std::string dir = slash == std::string::npos ? "."
                            : slash == 0               ? "/"
                                                       : path.substr(0, slash);
    struct stat dir_st {};
    int err = 0;
    if (::stat(dir.c_str(), &dir_st) != 0)
        err = errno;
    else if (!S_ISDIR(dir_st.st_mode))
        err = ENOTDIR;
    else if (::access(dir.c_str(), W_OK | X_OK) != 0)
        err = errno;
    if (err != 0) {
        error = option + " " + path + ": directory " + dir + ": " + std::strerror(err);
        return false;
    }
    for (const auto& [other, what] : others) {
        if (other == path && other != "-") {
            error = option + " " + path + ": is " + what + " (refusing to overwrite it)";
            return false;
        }
        struct stat st {};
        if (!exists || other == "-" || ::stat(other.c_str(), &st) != 0) continue;
        if (st.st_dev == out_st.st_dev && st.st_ino == out_st.st_ino) {
            error =
                option + " " + path + ": is " + what + " " + other + " (refusing to overwrite it)";
            return false;
        }
    }
    return true;
}

bool write_report_file(const std::string& option, const std::string& path, std::string_view page,
                       std::string& error) {
    const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
    std::FILE* f = std::fopen(tmp.c_str(), "w");
    if (!f) {
        error = option + " " + path + ": " + std::strerror(errno);
        return false;
    }
    const bool written = std::fwrite(page.data(), 1, page.size(), f) == page.size();
    const int saved = errno;
    const bool closed = std::fclose(f) == 0;
    if (!written || !closed) {
        error = option + " " + path + ": " + std::strerror(written ? errno : saved);
        std::remove(tmp.c_str());
        return false;
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        error = option + " " + path + ": " + std::strerror(errno);
        std::remove(tmp.c_str());
        return false;
    }
    return true;
}

}  // namespace insert::correlate::report

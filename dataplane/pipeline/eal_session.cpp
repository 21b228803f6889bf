#include "dataplane/pipeline/eal_session.hpp"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_log.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>

namespace insert::pipeline {

namespace {

constexpr const char* kHugepageRoot = "/sys/kernel/mm/hugepages";
constexpr const char* kRuntimeRoot = "/var/run/dpdk";
// --no-huge gives EAL anonymous 4 KB pages; it still wants headroom beyond what we
// allocate ourselves (memzones, ring and mempool headers, driver bookkeeping).
constexpr uint64_t kEalOverheadBytes = 64u << 20;
constexpr uint64_t kMiB = 1u << 20;

bool user_has(const std::vector<std::string>& args, std::initializer_list<std::string_view> opts) {
    for (const std::string& a : args)
        for (std::string_view o : opts)
            if (a == o || (a.size() > o.size() && a.compare(0, o.size(), o) == 0 &&
                           (a[o.size()] == '=' || o.size() == 2)))
                return true;
    return false;
}

std::string lcore_map(unsigned lcores, const std::vector<unsigned>& cpus) {
    // One lcore per CPU when there are enough CPUs; otherwise every lcore floats over all
    // allowed CPUs and the kernel scheduler shares them (replay on a 2-core VM with 4
    // workers). Pinning several busy lcores to one CPU would serialise them instead.
    std::string map;
    if (lcores <= cpus.size()) {
        for (unsigned i = 0; i < lcores; ++i) {
            if (i) map += ',';
            map += std::to_string(i) + "@" + std::to_string(cpus[i]);
        }
        return map;
    }
    std::string set;
    for (std::size_t i = 0; i < cpus.size(); ++i) {
        if (i) set += ',';
        set += std::to_string(cpus[i]);
    }
    return "(0-" + std::to_string(lcores - 1) + ")@(" + set + ")";
}

std::string unique_prefix(const std::string& tool) {
    static std::atomic<unsigned> sequence{0};
    const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    return tool + "-" + std::to_string(::getpid()) + "-" + std::to_string(sequence++) + "-" +
           std::to_string(static_cast<uint64_t>(now) % 1000000);
}

bool all_digits(std::string_view s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Runtime directories named by unique_prefix() ("insert-...-PID-SEQ-TIME") whose process is
// gone: a tool killed by SIGKILL (or a crash) could not remove its own.
void sweep_stale_runtime_dirs() {
    namespace fs = std::filesystem;
    std::error_code ec;
    for (const auto& dir : fs::directory_iterator(kRuntimeRoot, ec)) {
        const std::string name = dir.path().filename().string();
        if (name.rfind("insert-", 0) != 0) continue;
        const std::size_t time_dash = name.rfind('-');
        if (time_dash == std::string::npos || time_dash == 0) continue;
        const std::size_t seq_dash = name.rfind('-', time_dash - 1);
        if (seq_dash == std::string::npos || seq_dash == 0) continue;
        const std::size_t pid_dash = name.rfind('-', seq_dash - 1);
        if (pid_dash == std::string::npos) continue;
        const std::string_view pid(name.data() + pid_dash + 1, seq_dash - pid_dash - 1);
        if (!all_digits(pid) ||
            !all_digits(std::string_view(name).substr(seq_dash + 1, time_dash - seq_dash - 1)) ||
            !all_digits(std::string_view(name).substr(time_dash + 1)))
            continue;
        const long id = std::strtol(std::string(pid).c_str(), nullptr, 10);
        if (id <= 0 || id == ::getpid() || ::kill(static_cast<pid_t>(id), 0) == 0 || errno != ESRCH)
            continue;
        std::error_code ignore;
        fs::remove_all(dir.path(), ignore);
    }
}

// Holds back what is written to stdout and stderr (EAL's messages and usage text) until
// release(), in a memory file.
class OutputHold {
  public:
    OutputHold() {
        std::fflush(stdout);
        std::fflush(stderr);
        fd_ = memfd_create("insert-eal-init", MFD_CLOEXEC);
        if (fd_ >= 0 && fd_ <= STDERR_FILENO) {  // a standard descriptor was closed: no hold
            ::close(fd_);
            fd_ = -1;
        }
        if (fd_ < 0) return;
        saved_out_ = ::dup(STDOUT_FILENO);
        saved_err_ = ::dup(STDERR_FILENO);
        ::dup2(fd_, STDOUT_FILENO);
        ::dup2(fd_, STDERR_FILENO);
    }
    // Puts stdout and stderr back and returns what was written meanwhile.
    std::string release() {
        if (fd_ < 0) return {};
        std::fflush(stdout);
        std::fflush(stderr);
        // A descriptor that was closed when the hold began is closed again.
        for (const auto& [saved, fd] :
             {std::pair{saved_out_, STDOUT_FILENO}, {saved_err_, STDERR_FILENO}}) {
            if (saved >= 0) {
                ::dup2(saved, fd);
                ::close(saved);
            } else {
                ::close(fd);
            }
        }
        std::string text;
        char buf[4096];
        ::lseek(fd_, 0, SEEK_SET);
        for (ssize_t n; (n = ::read(fd_, buf, sizeof buf)) > 0;)
            text.append(buf, static_cast<std::size_t>(n));
        ::close(fd_);
        fd_ = -1;
        return text;
    }
    ~OutputHold() { release(); }

  private:
    int fd_ = -1, saved_out_ = -1, saved_err_ = -1;
};

// The first line EAL wrote (its reason), without the "EAL: " or program-name prefix.
std::string first_reason(const std::string& text, const std::string& program) {
    std::size_t at = 0;
    while (at < text.size()) {
        std::size_t end = text.find('\n', at);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(at, end - at);
        at = end + 1;
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
        if (line.empty()) continue;
        for (const std::string& prefix : {std::string("EAL: "), program + ": "})
            if (line.rfind(prefix, 0) == 0) line.erase(0, prefix.size());
        return line;
    }
    return {};
}

}  // namespace

uint64_t free_hugepage_bytes() {
    namespace fs = std::filesystem;
    std::error_code ec;
    uint64_t total = 0;
    for (const auto& dir : fs::directory_iterator(kHugepageRoot, ec)) {
        // Directory names are "hugepages-<size>kB".
        const std::string name = dir.path().filename().string();
        const auto dash = name.find('-');
        if (dash == std::string::npos) continue;
        const uint64_t kb = std::strtoull(name.c_str() + dash + 1, nullptr, 10);
        std::ifstream in(dir.path() / "free_hugepages");
        uint64_t pages = 0;
        if (in >> pages) total += pages * kb * 1024;
    }
    return total;
}

std::vector<unsigned> allowed_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<unsigned> cpus;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        for (unsigned c = 0; c < CPU_SETSIZE; ++c)
            if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
    if (cpus.empty()) cpus.push_back(0);
    return cpus;
}

EalPlan plan_eal(const EalRequest& request) {
    EalPlan plan;
    const auto& user = request.user_args;
    plan.args.push_back(request.tool);

    plan.own_prefix = !user_has(user, {"--file-prefix"});
    if (user_has(user, {"--file-prefix"})) {
        for (std::size_t i = 0; i < user.size(); ++i) {
            if (user[i] == "--file-prefix" && i + 1 < user.size())
                plan.file_prefix = user[i + 1];
            else if (user[i].rfind("--file-prefix=", 0) == 0)
                plan.file_prefix = user[i].substr(14);
        }
    } else {
        plan.file_prefix = unique_prefix(request.tool);
        plan.args.push_back("--file-prefix=" + plan.file_prefix);
    }

    if (!user_has(user, {"-l", "-c", "--lcores"}))
        plan.args.push_back("--lcores=" + lcore_map(request.lcores, allowed_cpus()));

    const uint64_t need = request.memory_bytes + kEalOverheadBytes;
    if (user_has(user, {"--no-huge"})) {
        plan.hugepages = false;
        if (!user_has(user, {"-m"})) {
            plan.args.push_back("-m");
            plan.args.push_back(std::to_string((need + kMiB - 1) / kMiB));
        }
    } else if (user_has(user, {"-m", "--socket-mem", "--huge-dir"})) {
        plan.hugepages = true;  // the user chose the memory set-up
    } else if (free_hugepage_bytes() >= need) {
        plan.hugepages = true;
    } else {
        plan.args.push_back("--no-huge");
        plan.args.push_back("-m");
        plan.args.push_back(std::to_string((need + kMiB - 1) / kMiB));
    }
    // No shared config and no hugepage files left behind if the process is killed.
    // (--no-huge implies legacy memory, which EAL refuses to combine with --in-memory.)
    if (plan.hugepages && !user_has(user, {"--in-memory", "--proc-type", "--legacy-mem"}))
        plan.args.push_back("--in-memory");
    if (!request.want_pci && !user_has(user, {"-a", "--allow", "-b", "--block", "--no-pci"}))
        plan.args.push_back("--no-pci");
    if (!user_has(user, {"--telemetry", "--no-telemetry"})) plan.args.push_back("--no-telemetry");
    // Errors only: EAL's warnings are about choices made here (e.g. "No free 1048576 kB
    // hugepages reported" on every run of a machine with no 1 GB pages).
    if (!user_has(user, {"--log-level"})) plan.args.push_back("--log-level=lib.eal:error");
    plan.args.insert(plan.args.end(), user.begin(), user.end());
    return plan;
}

EalSession::~EalSession() {
    stop();
}

bool EalSession::start(const EalRequest& request, std::string& error) {
    plan_ = plan_eal(request);
    own_prefix_ = plan_.own_prefix;
    bad_options_ = false;
    sweep_stale_runtime_dirs();
    std::vector<char*> argv;
    argv.reserve(plan_.args.size() + 1);
    for (std::string& a : plan_.args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // rte_eal_init may permute argv; it only reads the strings.
    OutputHold hold;
    rte_errno = 0;
    const int rc = rte_eal_init(static_cast<int>(argv.size() - 1), argv.data());
    const int eal_errno = rte_errno;
    const std::string said = hold.release();
    if (rc < 0) {
        bad_options_ = eal_errno == EINVAL;
        std::string reason = first_reason(said, plan_.args[0]);
        if (reason.empty()) reason = eal_errno ? rte_strerror(eal_errno) : "no reason given";
        error = std::string(bad_options_ ? "bad EAL options: " : "EAL initialisation failed: ") +
                reason + " (EAL options:";
        for (std::size_t i = 1; i < plan_.args.size(); ++i) error += " " + plan_.args[i];
        error += ")";
        // A failed init may already have created its directory - but a prefix the user
        // chose may be another running process's (the failure may be that clash).
        if (own_prefix_) remove_runtime_dir();
        return false;
    }
    // DPDK 22.11 logs to stdout (and syslog) once EAL is up; stdout carries `--records -`.
    // Every later line of DPDK's and of INSERT's components (dataplane/common/log.hpp) goes
    // to stderr.
    rte_openlog_stream(stderr);
    if (!said.empty()) std::fputs(said.c_str(), stderr);
    running_ = true;
    return true;
}

void EalSession::stop() {
    if (!running_) return;
    running_ = false;
    rte_eal_cleanup();
    remove_runtime_dir();
}

void EalSession::remove_runtime_dir() {
    // EAL creates /var/run/dpdk/<prefix> even with --in-memory; remove ours only.
    if (!plan_.file_prefix.empty() && plan_.file_prefix.find('/') == std::string::npos &&
        plan_.file_prefix != "rte") {
        std::error_code ec;
        std::filesystem::remove_all(std::filesystem::path(kRuntimeRoot) / plan_.file_prefix, ec);
    }
}

}  // namespace insert::pipeline

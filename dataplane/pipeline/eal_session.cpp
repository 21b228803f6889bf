#include "dataplane/pipeline/eal_session.hpp"

#include <rte_eal.h>
#include <rte_errno.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
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
    if (!user_has(user, {"--log-level"})) plan.args.push_back("--log-level=lib.eal:warning");
    plan.args.insert(plan.args.end(), user.begin(), user.end());
    return plan;
}

EalSession::~EalSession() {
    stop();
}

bool EalSession::start(const EalRequest& request, std::string& error) {
    plan_ = plan_eal(request);
    std::vector<char*> argv;
    argv.reserve(plan_.args.size() + 1);
    for (std::string& a : plan_.args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // rte_eal_init may permute argv; it only reads the strings.
    const int rc = rte_eal_init(static_cast<int>(argv.size() - 1), argv.data());
    if (rc < 0) {
        error =
            std::string("EAL initialisation failed: ") + rte_strerror(rte_errno) + " (EAL options:";
        for (std::size_t i = 1; i < plan_.args.size(); ++i) error += " " + plan_.args[i];
        error += ")";
        remove_runtime_dir();  // a failed init may already have created it
        return false;
    }
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

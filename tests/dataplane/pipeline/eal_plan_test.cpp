// EAL defaults (dataplane/pipeline/eal_session.hpp): what replay hands rte_eal_init().
#include <gtest/gtest.h>

#include <algorithm>

#include "dataplane/pipeline/eal_session.hpp"

using insert::pipeline::EalRequest;
using insert::pipeline::plan_eal;

namespace {
bool has(const std::vector<std::string>& args, const std::string& a) {
    return std::find(args.begin(), args.end(), a) != args.end();
}
std::string starting(const std::vector<std::string>& args, const std::string& prefix) {
    for (const auto& a : args)
        if (a.rfind(prefix, 0) == 0) return a;
    return "";
}
}  // namespace

TEST(EalPlan, every_process_gets_its_own_file_prefix) {
    EalRequest r;
    const auto a = plan_eal(r);
    const auto b = plan_eal(r);
    EXPECT_FALSE(a.file_prefix.empty());
    EXPECT_NE(a.file_prefix, b.file_prefix);
    EXPECT_EQ(starting(a.args, "--file-prefix="), "--file-prefix=" + a.file_prefix);
}

TEST(EalPlan, more_lcores_than_cores_float_over_all_cores) {
    EalRequest r;
    r.lcores = static_cast<unsigned>(insert::pipeline::allowed_cpus().size()) + 3;
    const auto plan = plan_eal(r);
    const std::string lcores = starting(plan.args, "--lcores=");
    EXPECT_EQ(lcores.rfind("--lcores=(0-" + std::to_string(r.lcores - 1) + ")@(", 0), 0u) << lcores;
}

TEST(EalPlan, one_lcore_per_core_when_they_fit) {
    EalRequest r;
    r.lcores = 1;
    const auto cpus = insert::pipeline::allowed_cpus();
    EXPECT_EQ(starting(plan_eal(r).args, "--lcores="), "--lcores=0@" + std::to_string(cpus[0]));
}

// EAL's warnings are about choices made here: left at its default level, every run would
// print "EAL: No free 1048576 kB hugepages reported", even with --quiet. EAL's errors still
// show.
TEST(EalPlan, eal_says_only_errors_by_default) {
    EalRequest r;
    const auto plan = plan_eal(r);
    EXPECT_EQ(starting(plan.args, "--log-level"), "--log-level=lib.eal:error");
    EXPECT_TRUE(plan.own_prefix);  // made here: removed after a failed start
}

TEST(EalPlan, user_options_win) {
    EalRequest r;
    r.user_args = {"--file-prefix", "mine", "-l", "0-2", "--no-huge", "-m", "300", "--log-level=8"};
    const auto plan = plan_eal(r);
    EXPECT_EQ(plan.file_prefix, "mine");
    EXPECT_FALSE(plan.own_prefix);  // may be another process's: never removed on failure
    EXPECT_EQ(starting(plan.args, "--file-prefix="), "");
    EXPECT_EQ(starting(plan.args, "--lcores"), "");
    EXPECT_EQ(std::count(plan.args.begin(), plan.args.end(), "-m"), 1);
    EXPECT_EQ(std::count(plan.args.begin(), plan.args.end(), "--no-huge"), 1);
    EXPECT_FALSE(plan.hugepages);
    EXPECT_EQ(plan.args.back(), "--log-level=8");
}

TEST(EalPlan, no_huge_without_memory_size_gets_one) {
    EalRequest r;
    r.memory_bytes = 100u << 20;
    r.user_args = {"--no-huge"};
    const auto plan = plan_eal(r);
    EXPECT_TRUE(has(plan.args, "-m"));
}

TEST(EalPlan, replay_has_no_devices_and_no_telemetry_socket) {
    EalRequest r;
    const auto plan = plan_eal(r);
    EXPECT_TRUE(has(plan.args, "--no-pci"));
    EXPECT_TRUE(has(plan.args, "--no-telemetry"));
    EXPECT_EQ(has(plan.args, "--in-memory"), plan.hugepages);
    r.user_args = {"-a", "0000:01:00.0"};
    EXPECT_FALSE(has(plan_eal(r).args, "--no-pci"));
}

TEST(EalPlan, falls_back_to_4k_pages_without_enough_free_hugepages) {
    EalRequest r;
    r.memory_bytes = insert::pipeline::free_hugepage_bytes() + (1ull << 30);
    const auto plan = plan_eal(r);
    EXPECT_FALSE(plan.hugepages);
    EXPECT_TRUE(has(plan.args, "--no-huge"));
}

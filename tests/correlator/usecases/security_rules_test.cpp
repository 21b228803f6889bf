// The security rule table (correlator/usecases/security_rules.hpp) every reader of the
// rules goes through - the finder, the records, Alertmanager, the HTML report and
// --list-rules: one row per AlertKind in its order, names that are the records' and unique,
// the memory rules as rkey_scan's only inputs, rkey_scan decided over offences rather
// than per message, and Alertmanager's two severities.
#include "correlator/usecases/security_rules.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>

namespace insert::correlate {
namespace {

AlertKind kind_at(std::size_t k) {
    return static_cast<AlertKind>(k);
}

TEST(SecurityRules, one_row_per_kind_in_kind_order) {
    const auto& rules = security_rules();
    ASSERT_EQ(rules.size(), kAlertKinds);
    for (std::size_t k = 0; k < kAlertKinds; ++k) {
        SCOPED_TRACE(k);
        EXPECT_EQ(rules[k].kind, kind_at(k));
        EXPECT_EQ(&security_rule(kind_at(k)), &rules[k]);
        EXPECT_FALSE(rules[k].meaning.empty());
    }
}

TEST(SecurityRules, names_are_unique_and_match_alert_kind_name) {
    std::set<std::string_view> names;
    for (const SecurityRule& rule : security_rules()) {
        EXPECT_FALSE(rule.name.empty());
        EXPECT_TRUE(names.insert(rule.name).second) << "twice: " << rule.name;
        EXPECT_EQ(alert_kind_name(rule.kind), rule.name);
    }
    EXPECT_EQ(names.size(), kAlertKinds);
    // The names the records and docs/correlation.md use.
    EXPECT_EQ(alert_kind_name(AlertKind::rkey_unknown), "rkey_unknown");
    EXPECT_EQ(alert_kind_name(AlertKind::rkey_scan), "rkey_scan");
    EXPECT_EQ(alert_kind_name(AlertKind::injected_message), "injected_message");
    EXPECT_EQ(alert_kind_name(AlertKind::count), "unknown");
}

TEST(SecurityRules, exactly_the_four_memory_rules_feed_rkey_scan) {
    const std::set<AlertKind> memory = {AlertKind::rkey_unknown, AlertKind::rkey_stale,
                                        AlertKind::out_of_bounds, AlertKind::access_denied};
    std::set<AlertKind> feeding;
    for (const SecurityRule& rule : security_rules())
        if (rule.feeds_scan) feeding.insert(rule.kind);
    EXPECT_EQ(feeding, memory);
    EXPECT_FALSE(security_rule(AlertKind::rkey_scan).feeds_scan) << "a scan is no offence of one";
}

TEST(SecurityRules, rkey_scan_is_decided_over_offences_not_per_message) {
    for (const SecurityRule& rule : security_rules()) {
        SCOPED_TRACE(std::string(rule.name));
        if (rule.kind == AlertKind::rkey_scan)
            EXPECT_EQ(rule.offends, nullptr);
        else
            EXPECT_NE(rule.offends, nullptr);
    }
}

TEST(SecurityRules, severities_are_warning_or_critical) {
    for (const SecurityRule& rule : security_rules()) {
        SCOPED_TRACE(std::string(rule.name));
        EXPECT_TRUE(rule.severity == "warning" || rule.severity == "critical") << rule.severity;
        EXPECT_EQ(alert_severity(rule.kind), rule.severity);
    }
    EXPECT_EQ(alert_severity(AlertKind::count), "warning");
}

}  // namespace
}  // namespace insert::correlate

// RecordSink::lines hands the lines of text formatted elsewhere (the parallel e2e writer's
// chunks) to the observer one by one, as the one-thread writer does record by record.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "correlator/output/record_sink.hpp"

namespace insert::correlate {
namespace {

std::vector<std::string> observed(std::string_view text) {
    RecordSink sink(nullptr);
    std::vector<std::string> seen;
    sink.set_observer([&](std::string_view line) { seen.emplace_back(line); });
    sink.lines(text);
    return seen;
}

TEST(RecordSink, lines_reach_the_observer_one_by_one) {
    EXPECT_EQ(observed("{\"a\":1}\n{\"b\":2}\n"),
              (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}"}));
    EXPECT_EQ(observed(""), std::vector<std::string>{});
    // A last line without its newline is still one line, and the walk ends.
    EXPECT_EQ(observed("{\"a\":1}\n{\"b\":2}"),
              (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}"}));
}

}  // namespace
}  // namespace insert::correlate

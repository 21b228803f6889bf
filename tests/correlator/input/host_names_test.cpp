// HostNames: ids by first appearance, names read back without the interning lock, across
// the boundaries of the chunks they are published in, while other threads intern.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "correlator/input/line_parser.hpp"

namespace insert::correlate {
namespace {

// Built with += (GCC 12 warns, wrongly, on chained + of std::strings: -Wrestrict).
std::string host_name(std::string_view prefix, uint32_t i) {
    std::string s(prefix);
    s += std::to_string(i);
    return s;
}

TEST(HostNames, every_id_reads_back_its_name_across_chunk_boundaries) {
    HostNames names;
    EXPECT_EQ(names.size(), 0u);
    EXPECT_TRUE(names.view(0).empty());
    // 64, 128, 256, ... names per chunk: 1000 names span chunks 0-3.
    for (uint32_t i = 0; i < 1000; ++i) ASSERT_EQ(names.intern(host_name("node", i)), i);
    EXPECT_EQ(names.size(), 1000u);
    for (const uint32_t id : {0u, 63u, 64u, 191u, 192u, 447u, 448u, 999u})
        EXPECT_EQ(names.view(id), host_name("node", id)) << id;
    EXPECT_EQ(names.intern("node64"), 64u);  // known: same id, nothing added
    EXPECT_EQ(names.size(), 1000u);
    EXPECT_TRUE(names.view(1000).empty());
    EXPECT_EQ(names.name(1000), "");
    EXPECT_EQ(names.intern(""), 1000u);  // the empty name is a name
    EXPECT_EQ(names.view(1000), "");
    EXPECT_EQ(names.size(), 1001u);
}

TEST(HostNames, readers_see_every_published_name_while_writers_intern) {
    HostNames names;
    constexpr uint32_t kPerWriter = 5000;
    std::vector<std::thread> writers;
    for (int w = 0; w < 2; ++w)
        writers.emplace_back([&names, w] {
            for (uint32_t i = 0; i < kPerWriter; ++i)
                names.intern(host_name(w == 0 ? "w0-" : "w1-", i));
        });
    uint64_t checked = 0;
    // Reads until it has seen the last name: at least once, however the threads are
    // scheduled (a reader that first ran after the writers had finished saw nothing).
    std::thread reader([&] {
        uint32_t n = 0;
        do {
            n = static_cast<uint32_t>(names.size());
            if (n == 0) continue;
            const std::string_view name = names.view(n - 1);
            ASSERT_EQ(name[0], 'w');
            ++checked;
        } while (n < 2 * kPerWriter);
    });
    for (auto& t : writers) t.join();
    reader.join();
    EXPECT_EQ(names.size(), 2 * kPerWriter);
    for (int w = 0; w < 2; ++w)
        for (uint32_t i = 0; i < kPerWriter; i += 499) {
            const std::string name = host_name(w == 0 ? "w0-" : "w1-", i);
            EXPECT_EQ(names.view(names.intern(name)), name);
        }
    EXPECT_GT(checked, 0u);
}

}  // namespace
}  // namespace insert::correlate

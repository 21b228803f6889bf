// The ingest's block reader: mapped files are cut into the same whole-line blocks as the
// bytes read from a pipe, with readable padding after every block, and a file that
// shrinks under the mapping ends the read with an error instead of SIGBUS.
#include "correlator/input/block_reader.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace insert::correlate {
namespace {

std::string temp_path(const std::string& tag) {
    return (std::filesystem::temp_directory_path() /
            ("insert-block-reader-" + std::to_string(::getpid()) + "-" + tag))
        .string();
}

void write_file(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

struct Cut {
    std::string joined;
    std::size_t blocks = 0;
    bool every_block_ends_a_line = true;
    bool last_unterminated = false;
    std::string error;
};

// Reads `inputs` to the end, checking each block's padding is there to be read.
Cut cut(const std::vector<std::string>& inputs) {
    Cut c;
    BlockReader reader(inputs, c.error);
    while (Block* raw = reader.next()) {
        std::unique_ptr<Block> b(raw);
        ++c.blocks;
        c.joined.append(b->text, b->size);
        volatile char sink = 0;
        for (std::size_t i = 0; i < simdjson::SIMDJSON_PADDING; ++i)
            sink = sink + b->text[b->size + i];
        if (b->size == 0 || b->text[b->size - 1] != '\n') {
            if (!b->last_unterminated) c.every_block_ends_a_line = false;
            c.last_unterminated = b->last_unterminated;
        }
        b->release();
    }
    if (c.error.empty()) reader.check_shrunk();
    return c;
}

// ~3 MiB of lines of varied length: several blocks, lines across every boundary.
std::string lines(std::size_t count) {
    std::string text;
    for (std::size_t i = 0; i < count; ++i)
        text += "{\"type\":\"msg\",\"n\":" + std::to_string(i) + ",\"pad\":\"" +
                std::string(i % 97, 'x') + "\"}\n";
    return text;
}

TEST(BlockReader, a_mapped_file_is_cut_into_the_blocks_of_whole_lines_a_pipe_gives) {
    const std::string text = lines(40000);
    ASSERT_GT(text.size(), std::size_t{3} << 20);
    const std::string path = temp_path("lines");
    // Whole, unterminated, ending just past a block, and with a line longer than a block.
    const std::string long_line = "{\"pad\":\"" + std::string(3u << 20, 'y') + "\"}\n";
    const std::string cases[] = {text,
                                 text + "{\"cut\":",
                                 text.substr(0, (1u << 20) + 10),
                                 text.substr(0, 1000) + long_line + text.substr(0, 5000),
                                 "\n",
                                 "x"};
    for (const std::string& content : cases) {
        write_file(path, content);
        const Cut mapped = cut({path});
        EXPECT_EQ(mapped.error, "");
        EXPECT_EQ(mapped.joined, content);
        EXPECT_TRUE(mapped.every_block_ends_a_line);
        EXPECT_EQ(mapped.last_unterminated, content.back() != '\n');
        // The same bytes through a pipe (read into buffers): the same lines.
        const std::string fifo = temp_path("fifo");
        ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
        std::thread writer([&] { write_file(fifo, content); });
        const Cut piped = cut({fifo});
        writer.join();
        std::filesystem::remove(fifo);
        EXPECT_EQ(piped.joined, content);
        EXPECT_EQ(piped.last_unterminated, mapped.last_unterminated);
    }
    std::filesystem::remove(path);
}

TEST(BlockReader, a_file_that_shrinks_under_the_mapping_is_an_error_naming_it) {
    const std::string path = temp_path("shrinks");
    write_file(path, lines(40000));
    std::string error;
    {
        const std::vector<std::string> inputs = {path};  // the reader keeps a reference
        BlockReader reader(inputs, error);
        std::unique_ptr<Block> first(reader.next());
        ASSERT_TRUE(first);
        ASSERT_EQ(::truncate(path.c_str(), 0), 0);  // another program empties the file
        // Reading on touches pages that are gone: zeros instead of SIGBUS, then the error.
        while (Block* b = reader.next()) {
            volatile char sink = b->text[b->size / 2];
            (void)sink;
            delete b;
        }
        if (error.empty()) reader.check_shrunk();
    }
    EXPECT_EQ(error, path + ": the file shrank while it was read");
    std::filesystem::remove(path);
}

}  // namespace
}  // namespace insert::correlate

// insert-gen's OutputFile: a big existing output is replaced by a new file (the old inode
// torn down in the background) with the same permission bits; a file with another hard
// link, or a small one, is truncated in place, as open(O_TRUNC) would. Preallocation gives
// back the blocks it allocated beyond the file's final size.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "bench/gen/output_file.hpp"

namespace insert::gen {
namespace {

class GenOutputFile : public ::testing::Test {
  protected:
    void SetUp() override {
        char tmpl[] = "/tmp/gen_output_file_XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override {
        for (const char* name : {"/out", "/link"}) ::unlink((dir_ + name).c_str());
        ::rmdir(dir_.c_str());
    }
    // A file of `bytes` bytes with `mode`; its inode.
    ino_t make(const std::string& path, std::size_t bytes, mode_t mode) {
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, mode);
        EXPECT_GE(fd, 0);
        std::vector<char> block(1 << 20, 'x');
        for (std::size_t done = 0; done < bytes; done += block.size())
            EXPECT_EQ(::write(fd, block.data(), block.size()), static_cast<ssize_t>(block.size()));
        ::fchmod(fd, mode);
        ::close(fd);
        return stat_of(path).st_ino;
    }
    static struct stat stat_of(const std::string& path) {
        struct stat st {};
        EXPECT_EQ(::stat(path.c_str(), &st), 0);
        return st;
    }
    std::string dir_;
};

TEST_F(GenOutputFile, replaces_a_big_file_keeping_its_mode) {
    const std::string path = dir_ + "/out";
    const ino_t before = make(path, 32 << 20, 0600);
    {
        OutputFile file;
        const int fd = file.open(path, 0644);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(::write(fd, "new", 3), 3);
        ::close(fd);
    }
    const struct stat st = stat_of(path);
    EXPECT_NE(st.st_ino, before);
    EXPECT_EQ(st.st_size, 3);
    EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST_F(GenOutputFile, truncates_small_or_linked_files_in_place) {
    const std::string path = dir_ + "/out", link = dir_ + "/link";
    ino_t before = make(path, 1 << 20, 0644);
    {
        OutputFile file;
        const int fd = file.open(path, 0644);
        ASSERT_GE(fd, 0);
        ::close(fd);
    }
    EXPECT_EQ(stat_of(path).st_ino, before);
    EXPECT_EQ(stat_of(path).st_size, 0);

    before = make(path, 32 << 20, 0644);
    ASSERT_EQ(::link(path.c_str(), link.c_str()), 0);
    {
        OutputFile file;
        const int fd = file.open(path, 0644);
        ASSERT_GE(fd, 0);
        ::close(fd);
    }
    EXPECT_EQ(stat_of(path).st_ino, before);
    EXPECT_EQ(stat_of(link).st_size, 0);  // the other name sees the truncation, as with O_TRUNC
}

TEST_F(GenOutputFile, preallocation_keeps_only_the_final_size) {
    const std::string out = dir_ + "/out";
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    Preallocation prealloc;
    std::vector<char> block(300'000, 'y');
    uint64_t written = 0;
    for (int i = 0; i < 5; ++i) {
        prealloc.ahead(fd, written + block.size());
        ASSERT_EQ(::write(fd, block.data(), block.size()), static_cast<ssize_t>(block.size()));
        written += block.size();
    }
    EXPECT_TRUE(prealloc.release(fd, written));
    ::close(fd);
    const struct stat st = stat_of(out);
    EXPECT_EQ(static_cast<uint64_t>(st.st_size), written);
    // At most a block or so of slack (ext4: 4 KiB); without release(), ~36 MiB more.
    EXPECT_LT(static_cast<uint64_t>(st.st_blocks) * 512, written + (uint64_t{1} << 20));
}

}  // namespace
}  // namespace insert::gen

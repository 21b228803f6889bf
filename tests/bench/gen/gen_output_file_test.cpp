// insert-gen's OutputFile: an existing output is overwritten in place and cut to the new
// length at finish() (same inode and mode, as open(O_TRUNC) would leave them); a missing one
// is created; devices are left as they are; blocks preallocated beyond the final size are
// given back.
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
    static mode_t current_umask() {
        const mode_t m = ::umask(0);
        ::umask(m);
        return m;
    }
    std::string dir_;
};

TEST_F(GenOutputFile, overwrites_in_place_and_cuts_to_the_new_length) {
    const std::string path = dir_ + "/out", link = dir_ + "/link";
    const ino_t before = make(path, 32 << 20, 0600);
    ASSERT_EQ(::link(path.c_str(), link.c_str()), 0);
    {
        OutputFile file;
        const int fd = file.open(path, 0644);
        ASSERT_GE(fd, 0);
        file.ahead(3);
        ASSERT_EQ(::write(fd, "new", 3), 3);
        EXPECT_TRUE(file.finish(3));
        ::close(fd);
    }
    const struct stat st = stat_of(path);
    EXPECT_EQ(st.st_ino, before);
    EXPECT_EQ(st.st_size, 3);
    EXPECT_EQ(st.st_mode & 07777, 0600u);  // the existing file's mode, as with O_TRUNC
    EXPECT_EQ(stat_of(link).st_size, 3);   // the other name sees it, as with O_TRUNC
}

TEST_F(GenOutputFile, creates_a_missing_file_with_the_mode) {
    const std::string path = dir_ + "/out";
    OutputFile file;
    const int fd = file.open(path, 0640);
    ASSERT_GE(fd, 0);
    EXPECT_TRUE(file.finish(0));
    ::close(fd);
    const struct stat st = stat_of(path);
    EXPECT_EQ(st.st_size, 0);
    EXPECT_EQ(st.st_mode & 0777, 0640u & ~current_umask());
}

TEST_F(GenOutputFile, devices_are_written_as_they_are) {
    OutputFile file;
    const int fd = file.open("/dev/null", 0644);
    ASSERT_GE(fd, 0);
    file.ahead(100 << 20);
    EXPECT_TRUE(file.finish(100 << 20));  // no truncation of a device
    ::close(fd);
}

TEST_F(GenOutputFile, preallocation_keeps_only_the_final_size) {
    const std::string out = dir_ + "/out";
    OutputFile file;
    const int fd = file.open(out, 0644);
    ASSERT_GE(fd, 0);
    std::vector<char> block(300'000, 'y');
    uint64_t written = 0;
    for (int i = 0; i < 5; ++i) {
        file.ahead(written + block.size());
        ASSERT_EQ(::write(fd, block.data(), block.size()), static_cast<ssize_t>(block.size()));
        written += block.size();
    }
    EXPECT_TRUE(file.finish(written));
    ::close(fd);
    const struct stat st = stat_of(out);
    EXPECT_EQ(static_cast<uint64_t>(st.st_size), written);
    // At most a block or so of slack (ext4: 4 KiB); without finish(), ~36 MiB more.
    EXPECT_LT(static_cast<uint64_t>(st.st_blocks) * 512, written + (uint64_t{1} << 20));
}

}  // namespace
}  // namespace insert::gen

// Capture reader: pcap (us/ns, both byte orders), pcapng (if_tsresol, both byte orders,
// simple packet blocks), truncated files, wrong link types, files that are not captures.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "dataplane/capture/capture_file.hpp"
#include "dataplane/capture/pcap_writer.hpp"
#include "tests/dataplane/capture/capture_bytes.hpp"

namespace insert::capture {
namespace {

using insert::testing::CapturedFrame;
using insert::testing::pcap_image;
using insert::testing::pcapng_image;

// 2026-01-01T00:00:00.123456789Z, and frames 1 us + 1 ns apart.
constexpr uint64_t kT0 = 1'767'225'600'123'456'789ull;

std::vector<CapturedFrame> sample_frames() {
    std::vector<CapturedFrame> frames;
    for (uint8_t i = 0; i < 3; ++i) {
        CapturedFrame f;
        f.ts_ns = kT0 + i * 1'001ull;
        f.bytes.assign(60 + i * 3, static_cast<uint8_t>(0xA0 + i));
        frames.push_back(f);
    }
    frames[2].orig_len = 1500;  // cut by the snap length
    return frames;
}

class TempFile {
  public:
    explicit TempFile(const std::vector<uint8_t>& bytes) {
        static int counter = 0;
        path_ = ::testing::TempDir() + "insert_capture_test_" + std::to_string(getpid()) + "_" +
                std::to_string(counter++);
        EXPECT_TRUE(insert::testing::write_file(path_, bytes));
    }
    ~TempFile() { std::remove(path_.c_str()); }
    const std::string& path() const { return path_; }

  private:
    std::string path_;
};

std::vector<Frame> read_all(CaptureFile& file) {
    std::vector<Frame> out;
    Frame f;
    while (file.next(f)) out.push_back(f);
    return out;
}

void expect_sample(const std::vector<Frame>& got, uint64_t ts_granularity_ns) {
    const std::vector<CapturedFrame> want = sample_frames();
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(got[i].index, i + 1);
        EXPECT_EQ(got[i].ts_ns, want[i].ts_ns / ts_granularity_ns * ts_granularity_ns) << i;
        ASSERT_EQ(got[i].data.size(), want[i].bytes.size());
        EXPECT_TRUE(std::equal(got[i].data.begin(), got[i].data.end(), want[i].bytes.begin()));
        EXPECT_EQ(got[i].orig_len, want[i].orig_len ? want[i].orig_len : want[i].bytes.size());
    }
}

TEST(CaptureFile, reads_pcap_in_micro_and_nanoseconds_and_both_byte_orders) {
    for (bool ns : {false, true})
        for (bool big : {false, true}) {
            TempFile tmp(pcap_image(sample_frames(), {.nanosecond = ns, .big_endian = big}));
            CaptureFile file;
            ASSERT_TRUE(file.open(tmp.path())) << file.error();
            EXPECT_EQ(file.format(), Format::pcap);
            expect_sample(read_all(file), ns ? 1 : 1000);
            EXPECT_EQ(file.error(), "");
            EXPECT_FALSE(file.truncated());
        }
}

TEST(CaptureFile, reads_pcapng_with_its_timestamp_resolution) {
    struct Case {
        bool has_option;
        uint8_t tsresol;
        uint64_t granularity_ns;
    };
    // No option: microseconds. 9: ns. 0x80|10: 2^-10 s, checked separately below.
    for (const Case c : {Case{false, 0, 1000}, Case{true, 6, 1000}, Case{true, 9, 1}})
        for (bool big : {false, true}) {
            TempFile tmp(pcapng_image(
                sample_frames(),
                {.big_endian = big, .has_tsresol = c.has_option, .tsresol = c.tsresol}));
            CaptureFile file;
            ASSERT_TRUE(file.open(tmp.path())) << file.error();
            EXPECT_EQ(file.format(), Format::pcapng);
            expect_sample(read_all(file), c.granularity_ns);
            EXPECT_EQ(file.error(), "");
        }
}

TEST(CaptureFile, converts_binary_and_picosecond_resolutions_to_ns) {
    std::vector<CapturedFrame> frames(1);
    frames[0].ts_ns = 5'000'000'000ull + 500'000'000ull;  // 5.5 s: exact in 2^-10 s
    frames[0].bytes.assign(60, 0);
    TempFile binary(pcapng_image(frames, {.tsresol = 0x80 | 10}));
    CaptureFile file;
    ASSERT_TRUE(file.open(binary.path()));
    std::vector<Frame> got = read_all(file);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].ts_ns, 5'500'000'000ull);

    // Picoseconds: 20.999999999 s. The sub-second remainder (~10^12 ticks) times 10^9
    // overflows 64 bits unless the reader widens the product.
    frames[0].ts_ns = 20'999'999'999ull;
    TempFile pico(pcapng_image(frames, {.tsresol = 12}));
    CaptureFile file2;
    ASSERT_TRUE(file2.open(pico.path()));
    got = read_all(file2);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].ts_ns, 20'999'999'999ull);
}

TEST(CaptureFile, reads_simple_packet_blocks) {
    // The third frame (orig 1500) was cut to the interface's 66-byte snap length; its
    // block is padded to 68 bytes, and the 2 padding bytes are not packet data.
    TempFile tmp(pcapng_image(sample_frames(), {.simple_blocks = true, .snaplen = 66}));
    CaptureFile file;
    ASSERT_TRUE(file.open(tmp.path()));
    const std::vector<Frame> got = read_all(file);
    ASSERT_EQ(got.size(), 3u);
    EXPECT_EQ(got[0].data.size(), 60u);
    EXPECT_EQ(got[2].data.size(), 66u);
    EXPECT_EQ(got[2].orig_len, 1500u);
}

TEST(CaptureFile, header_only_pcap_has_no_frames_and_no_error) {
    TempFile tmp(pcap_image({}));
    CaptureFile file;
    ASSERT_TRUE(file.open(tmp.path()));
    EXPECT_TRUE(read_all(file).empty());
    EXPECT_EQ(file.error(), "");
}

TEST(CaptureFile, truncated_pcap_yields_complete_frames_then_a_truncation_error) {
    const std::vector<uint8_t> full = pcap_image(sample_frames());
    // Cut inside the third record's data, and inside its 16-byte record header.
    const std::size_t third = 24 + (16 + 60) + (16 + 63);
    for (std::size_t cut : {third + 16 + 10, third + 7}) {
        TempFile tmp(std::vector<uint8_t>(full.begin(), full.begin() + static_cast<long>(cut)));
        CaptureFile file;
        ASSERT_TRUE(file.open(tmp.path()));
        EXPECT_EQ(read_all(file).size(), 2u) << cut;
        EXPECT_TRUE(file.truncated());
        EXPECT_NE(file.error().find(tmp.path()), std::string::npos) << file.error();
        EXPECT_NE(file.error().find("truncated"), std::string::npos) << file.error();
    }
}

TEST(CaptureFile, truncated_pcapng_yields_complete_frames_then_a_truncation_error) {
    const std::vector<uint8_t> full = pcapng_image(sample_frames());
    for (std::size_t drop : {std::size_t{1}, std::size_t{30}}) {
        TempFile tmp(std::vector<uint8_t>(full.begin(), full.end() - static_cast<long>(drop)));
        CaptureFile file;
        ASSERT_TRUE(file.open(tmp.path()));
        EXPECT_EQ(read_all(file).size(), 2u);
        EXPECT_TRUE(file.truncated());
    }
}

TEST(CaptureFile, non_ethernet_pcap_is_refused_at_open) {
    TempFile tmp(pcap_image(sample_frames(), {.link_type = 101}));  // LINKTYPE_RAW
    CaptureFile file;
    EXPECT_FALSE(file.open(tmp.path()));
    EXPECT_NE(file.error().find(tmp.path()), std::string::npos);
    EXPECT_NE(file.error().find("link type 101"), std::string::npos) << file.error();
}

TEST(CaptureFile, pcap_link_type_with_fcs_flags_is_still_ethernet) {
    // FCS length 2 (16-bit words) in bits 28-31 and the P bit (26): Ethernet with FCS.
    TempFile tmp(pcap_image(sample_frames(), {.link_type = 0x24000001}));
    CaptureFile file;
    ASSERT_TRUE(file.open(tmp.path())) << file.error();
    EXPECT_EQ(read_all(file).size(), 3u);
}

TEST(CaptureFile, non_ethernet_pcapng_interface_is_an_error_that_is_not_truncation) {
    TempFile tmp(pcapng_image(sample_frames(), {.link_type = 113}));  // Linux cooked
    CaptureFile file;
    ASSERT_TRUE(file.open(tmp.path()));
    EXPECT_TRUE(read_all(file).empty());
    EXPECT_FALSE(file.truncated());
    EXPECT_NE(file.error().find("link type 113"), std::string::npos) << file.error();
}

TEST(CaptureFile, missing_and_non_capture_files_are_refused_naming_the_file) {
    CaptureFile file;
    EXPECT_FALSE(file.open("/nonexistent/insert.pcap"));
    EXPECT_EQ(file.error().rfind("/nonexistent/insert.pcap: ", 0), 0u) << file.error();

    const std::string text = "this is not a capture file, just some text\n";
    TempFile not_capture(std::vector<uint8_t>(text.begin(), text.end()));
    EXPECT_FALSE(file.open(not_capture.path()));
    EXPECT_NE(file.error().find("not a pcap or pcapng"), std::string::npos) << file.error();

    TempFile tiny(std::vector<uint8_t>{0xD4, 0xC3, 0xB2, 0xA1});
    EXPECT_FALSE(file.open(tiny.path()));
    EXPECT_FALSE(file.open(::testing::TempDir()));  // a directory
}

TEST(CaptureFile, corrupt_pcapng_block_length_is_not_truncation) {
    std::vector<uint8_t> image = pcapng_image(sample_frames());
    // The first EPB follows the 28-byte SHB and the IDB; give it a length that is not a
    // multiple of 4.
    const std::size_t idb_len = image[28 + 4];
    image[28 + idb_len + 4] = 0x0D;
    TempFile tmp(image);
    CaptureFile file;
    ASSERT_TRUE(file.open(tmp.path()));
    EXPECT_TRUE(read_all(file).empty());
    EXPECT_FALSE(file.error().empty());
    EXPECT_FALSE(file.truncated());
}

TEST(CaptureFile, rewind_restarts_from_the_first_frame) {
    TempFile tmp(pcapng_image(sample_frames()));
    CaptureFile file;
    ASSERT_TRUE(file.open(tmp.path()));
    EXPECT_EQ(read_all(file).size(), 3u);
    file.rewind();
    const std::vector<Frame> again = read_all(file);
    ASSERT_EQ(again.size(), 3u);
    EXPECT_EQ(again[0].index, 1u);
}

TEST(PcapWriter, writes_nanosecond_pcap_that_the_reader_reads_back) {
    const std::string path =
        ::testing::TempDir() + "insert_writer_test_" + std::to_string(getpid()) + ".pcap";
    {
        PcapWriter w;
        ASSERT_TRUE(w.open(path));
        for (const CapturedFrame& f : sample_frames()) w.write(f.ts_ns, f.bytes);
        EXPECT_EQ(w.frames(), 3u);
        ASSERT_TRUE(w.close());
    }
    CaptureFile file;
    ASSERT_TRUE(file.open(path));
    const std::vector<Frame> got = read_all(file);
    ASSERT_EQ(got.size(), 3u);
    EXPECT_EQ(got[1].ts_ns, kT0 + 1'001);
    EXPECT_EQ(got[2].data.size(), 66u);
    std::remove(path.c_str());
}

}  // namespace
}  // namespace insert::capture

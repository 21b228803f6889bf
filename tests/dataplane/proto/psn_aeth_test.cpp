// 24-bit PSN arithmetic (SPEC.md section 2) and AETH syndrome classes (section 1).
#include <gtest/gtest.h>

#include "dataplane/proto/aeth.hpp"
#include "dataplane/proto/psn.hpp"

namespace insert::proto {
namespace {

TEST(Psn, add_and_sub_wrap_at_24_bits) {
    EXPECT_EQ(psn_add(0xFFFFFF, 1), 0u);
    EXPECT_EQ(psn_add(0xFFFFFE, 5), 3u);
    EXPECT_EQ(psn_add(10, 0x1000000), 10u);
    EXPECT_EQ(psn_sub(0, 1), 0xFFFFFFu);
    EXPECT_EQ(psn_sub(3, 0xFFFFFE), 5u);
    EXPECT_EQ(psn_sub(7, 7), 0u);
}

TEST(Psn, newer_means_difference_in_one_to_two_pow_23_exclusive) {
    EXPECT_TRUE(psn_newer(1, 0));
    EXPECT_FALSE(psn_newer(0, 0));
    EXPECT_FALSE(psn_newer(0, 1));
    EXPECT_TRUE(psn_newer(0x7FFFFF, 0));   // 2^23 - 1 ahead: newer
    EXPECT_FALSE(psn_newer(0x800000, 0));  // exactly 2^23 ahead: not newer
    EXPECT_FALSE(psn_newer(0, 0x800000));  // and not older either way round
    EXPECT_TRUE(psn_newer(0, 0xFFFFFF));   // across the wrap
    EXPECT_TRUE(psn_newer(0x000005, 0xFFFFF0));
    EXPECT_FALSE(psn_newer(0xFFFFF0, 0x000005));
    EXPECT_TRUE(psn_newer(0x800000, 0x000001));  // 2^23 - 1 ahead
}

TEST(Psn, not_older_includes_equal) {
    EXPECT_TRUE(psn_not_older(5, 5));
    EXPECT_TRUE(psn_not_older(6, 5));
    EXPECT_FALSE(psn_not_older(4, 5));
    EXPECT_TRUE(psn_not_older(0, 0xFFFFFF));
}

TEST(Aeth, syndrome_bits_6_5_give_the_class) {
    EXPECT_EQ(aeth_class(0x1F), AethClass::ack);
    EXPECT_EQ(aeth_class(0x00), AethClass::ack);
    EXPECT_EQ(aeth_class(0x3F), AethClass::rnr_nak);
    EXPECT_EQ(aeth_class(0x20), AethClass::rnr_nak);
    EXPECT_EQ(aeth_class(0x40), AethClass::reserved);
    EXPECT_EQ(aeth_class(0x60), AethClass::nak);
    EXPECT_EQ(aeth_class(0x80 | 0x60), AethClass::nak);  // bit 7 is reserved
}

TEST(Aeth, nak_codes_group_as_spec_says) {
    EXPECT_EQ(nak_code(0x60), NakCode::psn_seq_error);
    EXPECT_EQ(nak_code(0x61), NakCode::invalid_request);
    EXPECT_EQ(nak_code(0x62), NakCode::remote_access);
    EXPECT_EQ(nak_code(0x63), NakCode::remote_op);
    EXPECT_EQ(nak_code(0x64), NakCode::invalid_request);  // invalid RD request
    for (uint8_t c = 5; c < 32; ++c) EXPECT_EQ(nak_code(0x60 | c), NakCode::invalid_request);
    EXPECT_FALSE(nak_is_fatal(NakCode::psn_seq_error));
    EXPECT_TRUE(nak_is_fatal(NakCode::invalid_request));
    EXPECT_TRUE(nak_is_fatal(NakCode::remote_access));
    EXPECT_TRUE(nak_is_fatal(NakCode::remote_op));
}

TEST(Aeth, responder_syndromes_encode_on_the_wire) {
    EXPECT_EQ(aeth_ack(), 0x1F);
    EXPECT_EQ(aeth_ack(3), 0x03);
    EXPECT_EQ(aeth_rnr_nak(0x12), 0x32);
    EXPECT_EQ(aeth_nak(NakCode::psn_seq_error), 0x60);
    EXPECT_EQ(aeth_nak(NakCode::invalid_request), 0x61);
    EXPECT_EQ(aeth_nak(NakCode::remote_access), 0x62);
    EXPECT_EQ(aeth_nak(NakCode::remote_op), 0x63);
}

}  // namespace
}  // namespace insert::proto

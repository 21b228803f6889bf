// `--port` validation against a fake /sys/bus/pci/devices tree.
#include <gtest/gtest.h>

#include <filesystem>

#include "dataplane/ports/pci_port.hpp"

namespace insert::ports {
namespace {

namespace fs = std::filesystem;

class PciPort : public ::testing::Test {
  protected:
    void SetUp() override {
        root_ = fs::temp_directory_path() /
                ("insert-pci-test-" +
                 std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(root_);
        fs::create_directories(root_ / "devices");
        fs::create_directories(root_ / "drivers");
    }
    void TearDown() override { fs::remove_all(root_); }
    // A device, bound to `driver` unless it is empty.
    void device(const std::string& addr, const std::string& driver) {
        fs::create_directories(root_ / "devices" / addr);
        if (driver.empty()) return;
        fs::create_directories(root_ / "drivers" / driver);
        fs::create_directory_symlink(root_ / "drivers" / driver,
                                     root_ / "devices" / addr / "driver");
    }
    bool check(const std::string& addr) {
        canonical_.clear();
        error_.clear();
        return check_pci_port(addr, canonical_, error_, (root_ / "devices").string());
    }
    fs::path root_;
    std::string canonical_, error_;
};

TEST_F(PciPort, devices_bound_to_dpdk_capable_drivers_are_accepted_in_canonical_form) {
    device("0000:03:00.0", "vfio-pci");
    device("0000:81:00.1", "mlx5_core");
    device("0001:00:02.0", "uio_pci_generic");
    EXPECT_TRUE(check("03:00.0")) << error_;
    EXPECT_EQ(canonical_, "0000:03:00.0");
    EXPECT_TRUE(check("0000:81:00.1")) << error_;
    EXPECT_EQ(canonical_, "0000:81:00.1");
    EXPECT_TRUE(check("0001:00:02.0")) << error_;
}

TEST_F(PciPort, upper_case_hex_is_accepted) {
    device("0000:af:00.0", "vfio-pci");
    EXPECT_TRUE(check("0000:AF:00.0")) << error_;
    EXPECT_EQ(canonical_, "0000:af:00.0");
}

TEST_F(PciPort, malformed_addresses_name_the_expected_form) {
    for (const char* bad : {"", "eth0", "0000:03:00", "0000:03:00.8", "000:03:00.0", "0000-03-00.0",
                            "0000:0g:00.0", "0000:03:00.0x"}) {
        EXPECT_FALSE(check(bad)) << bad;
        EXPECT_EQ(error_, std::string("--port ") + bad +
                              " is not a PCI address (DDDD:BB:DD.F, e.g. 0000:03:00.0)");
    }
}

TEST_F(PciPort, absent_device_is_named) {
    EXPECT_FALSE(check("0000:00:1f.7"));
    EXPECT_NE(error_.find("no PCI device 0000:00:1f.7"), std::string::npos) << error_;
}

TEST_F(PciPort, kernel_bound_and_unbound_devices_say_how_to_bind_them) {
    device("0000:03:00.0", "ixgbe");
    device("0000:04:00.0", "");
    EXPECT_FALSE(check("0000:03:00.0"));
    EXPECT_EQ(error_,
              "PCI device 0000:03:00.0 is bound to the kernel driver ixgbe: bind it to vfio-pci "
              "(dpdk-devbind.py -b vfio-pci 0000:03:00.0); only mlx5 NICs (ConnectX, BlueField) "
              "work beside their kernel driver");
    EXPECT_FALSE(check("0000:04:00.0"));
    EXPECT_EQ(error_,
              "PCI device 0000:04:00.0 is bound to no driver: bind it to vfio-pci "
              "(dpdk-devbind.py -b vfio-pci 0000:04:00.0)");
}

}  // namespace
}  // namespace insert::ports

#include "dataplane/ports/pci_port.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <string_view>

namespace insert::ports {

namespace {

bool hex_field(std::string_view s, std::size_t digits) {
    return s.size() == digits &&
           std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isxdigit(c); });
}

// DDDD:BB:DD.F with every field the right width.
bool well_formed(std::string_view a) {
    return a.size() == 12 && a[4] == ':' && a[7] == ':' && a[10] == '.' &&
           hex_field(a.substr(0, 4), 4) && hex_field(a.substr(5, 2), 2) &&
           hex_field(a.substr(8, 2), 2) && a[11] >= '0' && a[11] <= '7';
}

// Drivers through which DPDK reaches the device: the user-space I/O ones, and mlx5's
// kernel driver (the mlx5 PMD is bifurcated and needs it bound).
constexpr std::array<std::string_view, 4> kUsableDrivers = {"vfio-pci", "uio_pci_generic",
                                                            "igb_uio", "mlx5_core"};

}  // namespace

bool check_pci_port(const std::string& address, std::string& canonical, std::string& error,
                    const std::string& sysfs_pci) {
    std::string a = address;
    std::transform(a.begin(), a.end(), a.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (a.size() == 7) a = "0000:" + a;
    if (!well_formed(a)) {
        error = "--port " + address + " is not a PCI address (DDDD:BB:DD.F, e.g. 0000:03:00.0)";
        return false;
    }
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path device = fs::path(sysfs_pci) / a;
    if (!fs::exists(device, ec)) {
        error = "no PCI device " + a + " (not in " + sysfs_pci + "; `lspci -D` lists them)";
        return false;
    }
    const fs::path driver_link = device / "driver";
    const std::string bind_hint = "bind it to vfio-pci (dpdk-devbind.py -b vfio-pci " + a + ")";
    if (!fs::is_symlink(driver_link, ec)) {
        error = "PCI device " + a + " is bound to no driver: " + bind_hint;
        return false;
    }
    const std::string driver = fs::read_symlink(driver_link, ec).filename().string();
    if (std::find(kUsableDrivers.begin(), kUsableDrivers.end(), driver) == kUsableDrivers.end()) {
        error = "PCI device " + a + " is bound to the kernel driver " + driver + ": " + bind_hint +
                "; only mlx5 NICs (ConnectX, BlueField) work beside their kernel driver";
        return false;
    }
    canonical = a;
    return true;
}

}  // namespace insert::ports

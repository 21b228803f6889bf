// Checks a `--port` PCI address before EAL starts, so a wrong address or a NIC that DPDK
// cannot drive fails with one line that says why and what to do, instead of EAL's log
// and a missing port later.
#pragma once

#include <string>

namespace insert::ports {

// `address` is DDDD:BB:DD.F or BB:DD.F (hex; domain 0000 assumed). On success `canonical`
// is DDDD:BB:DD.F in lower case. The device must exist under `sysfs_pci` (the directory
// of /sys/bus/pci/devices) and be usable by DPDK: bound to vfio-pci, uio_pci_generic or
// igb_uio, or to mlx5_core (NVIDIA ConnectX/BlueField: DPDK's mlx5 driver works beside
// the kernel driver).
bool check_pci_port(const std::string& address, std::string& canonical, std::string& error,
                    const std::string& sysfs_pci = "/sys/bus/pci/devices");

}  // namespace insert::ports

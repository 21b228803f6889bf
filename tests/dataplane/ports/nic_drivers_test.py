#!/usr/bin/env python3
"""The NIC drivers `insert-dp --port` relies on are linked in and registered.

DPDK embeds a PMD_INFO_STRING (driver name and the PCI IDs it claims) in every driver
object; a driver present in the binary carries its string, one dropped by the linker does
not. There is no NIC on CI machines, so this is what can be checked: that a ConnectX or
BlueField port, an Intel port and a cloud VM's port would find their driver.
"""
import json
import re
import sys

binary = sys.argv[1]
data = open(binary, "rb").read()
drivers = {}
for m in re.finditer(rb"PMD_INFO_STRING= (\{.*?\})\x00", data):
    info = json.loads(m.group(1))
    drivers[info["name"]] = {(v, d) for v, d, *_ in info.get("pci_ids", [])}

MELLANOX, INTEL, AMAZON, REDHAT_VIRTIO, VMWARE, BROADCOM = 0x15B3, 0x8086, 0x1D0F, 0x1AF4, 0x15AD, 0x14E4
expected = {
    # driver: (vendor, device) pairs it must claim
    "mlx5_eth": [(MELLANOX, 0x101B),   # ConnectX-6
                 (MELLANOX, 0x101D),   # ConnectX-6 Dx
                 (MELLANOX, 0x1021),   # ConnectX-7
                 (MELLANOX, 0xA2D6),   # BlueField-2
                 (MELLANOX, 0xA2DC)],  # BlueField-3
    "net_i40e": [(INTEL, 0x1583)],     # XL710 40G
    "net_ice": [(INTEL, 0x1592)],      # E810-C
    "net_ixgbe": [(INTEL, 0x10FB)],    # 82599
    "net_iavf": [(INTEL, 0x1889)],     # adaptive VF
    "net_e1000_igb": [(INTEL, 0x1533)],
    "net_ena": [(AMAZON, 0xEC20)],
    "net_virtio": [(REDHAT_VIRTIO, 0x1000)],
    "net_vmxnet3": [(VMWARE, 0x07B0)],
    "net_bnxt": [(BROADCOM, 0x16D7)],  # BCM57414
}
# The software ports the tests and the inline mode over Linux interfaces use.
software = ["net_af_packet", "net_null", "net_ring", "net_pcap", "net_tap"]

failed = False
for name in software:
    if name not in drivers:
        print(f"FAIL: {name} is not linked into {binary}")
        failed = True
for name, ids in expected.items():
    if name not in drivers:
        print(f"FAIL: {name} is not linked into {binary}")
        failed = True
        continue
    for vendor, device in ids:
        if (vendor, device) not in drivers[name]:
            print(f"FAIL: {name} does not claim {vendor:04x}:{device:04x}")
            failed = True
print(f"{len(drivers)} drivers registered: {', '.join(sorted(drivers))}")
sys.exit(1 if failed else 0)

// The link widths the PCIe Base Specification defines (the Link Capabilities register's Maximum
// Link Width encodings: x1, x2, x4, x8, x12, x16, x32; docs/hardware-sources.md). One list for
// the link spec's check (link_spec.cpp) and for `kappasim solve`, which probes only these values
// when it varies a `lanes` key (issue 26 item 9).
#pragma once

#include <array>

namespace kappasim {

inline constexpr std::array<int, 7> kPcieLinkWidths{1, 2, 4, 8, 12, 16, 32};

inline constexpr bool valid_pcie_link_width(int lanes) {
  for (int w : kPcieLinkWidths)
    if (w == lanes) return true;
  return false;
}

}  // namespace kappasim

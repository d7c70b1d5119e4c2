// Zero-latency device: every request completes a fixed time (default 0 ns)
// after submission. Why: measures the guest's own software floor (driver,
// scheduler, workload) with the device taken out of the picture.
// Thread-safety: see Device.
#ifndef DEVMODEL_ZERO_H_
#define DEVMODEL_ZERO_H_

#include <cstdint>
#include <memory>

#include "devmodel/device.h"

namespace devmodel {

struct ZeroConfig {
  std::uint64_t capacity_bytes = 64ull << 30;  // exported size
  std::uint32_t logical_block_bytes = 512;     // 512 or 4096
  std::uint64_t latency_ns = 0;                // added to every request
};

// Returns nullptr and sets *error if the config is invalid.
std::unique_ptr<Device> NewZero(const ZeroConfig& config, std::string* error);

}  // namespace devmodel

#endif  // DEVMODEL_ZERO_H_

#include "devmodel/device.h"

namespace devmodel {

const char* Device::Check(const Request& r) const {
  const std::uint64_t block = logical_block_bytes();
  switch (r.op) {
    case Op::kFlush:
      return nullptr;
    case Op::kRead:
    case Op::kWrite:
    case Op::kTrim:
      break;
    default:
      return "unknown op";
  }
  if (r.length_bytes == 0) return "length_bytes is 0";
  if (r.op != Op::kTrim && r.length_bytes > kMaxTransferBytes) {
    return "read or write longer than 1 GiB (no device transfers that much in one command)";
  }
  if (r.offset_bytes % block != 0 || r.length_bytes % block != 0) {
    return "offset_bytes or length_bytes not a multiple of the logical block size";
  }
  const std::uint64_t cap = capacity_bytes();
  if (r.offset_bytes >= cap || r.length_bytes > cap - r.offset_bytes) {
    return "request extends beyond the device capacity";
  }
  return nullptr;
}

Completion Device::Poll(std::uint64_t /*tag*/, TimeNs now) { return {now, true}; }

}  // namespace devmodel

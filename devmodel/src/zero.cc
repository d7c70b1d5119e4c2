#include "devmodel/zero.h"

#include <nlohmann/json.hpp>
#include <string>

#include "model_state.h"

namespace devmodel {
namespace {

class ZeroDevice final : public Device {
 public:
  explicit ZeroDevice(const ZeroConfig& c) : c_(c) {}
  Completion Submit(const Request& r, TimeNs now) override {
    ++requests_;
    if (r.op == Op::kRead) bytes_read_ += r.length_bytes;
    if (r.op == Op::kWrite) bytes_written_ += r.length_bytes;
    return {now + c_.latency_ns, true};
  }
  std::uint64_t capacity_bytes() const override { return c_.capacity_bytes; }
  std::uint32_t logical_block_bytes() const override { return c_.logical_block_bytes; }
  std::string CountersJson() const override {
    nlohmann::json j;
    j["model"] = "zero";
    j["requests"] = requests_;
    j["host_bytes_read"] = bytes_read_;
    j["host_bytes_written"] = bytes_written_;
    return j.dump();
  }
  std::uint64_t MemoryBytes() const override { return sizeof(*this); }
  // Its state is its counters (model_state.h).
  bool SaveState(std::string* out, std::string* /*why*/) const override {
    internal::StateWriter w(out);
    for (std::uint64_t v : {requests_, bytes_read_, bytes_written_}) w.Put(v);
    return true;
  }
  bool LoadState(internal::StateReader* in, std::string* why) override {
    for (std::uint64_t* v : {&requests_, &bytes_read_, &bytes_written_}) *v = in->Get();
    if (!in->ok()) *why = "zero state: truncated";
    return in->ok();
  }

 private:
  ZeroConfig c_;
  std::uint64_t requests_ = 0, bytes_read_ = 0, bytes_written_ = 0;
};

}  // namespace

std::unique_ptr<Device> NewZero(const ZeroConfig& c, std::string* error) {
  if ((c.logical_block_bytes != 512 && c.logical_block_bytes != 4096) || c.capacity_bytes == 0 ||
      c.capacity_bytes % c.logical_block_bytes != 0) {
    if (error != nullptr) {
      *error = "zero.capacity_bytes (" + std::to_string(c.capacity_bytes) +
               ") must be a positive multiple of zero.logical_block_bytes (" +
               std::to_string(c.logical_block_bytes) + ", 512 or 4096)";
    }
    return nullptr;
  }
  return std::make_unique<ZeroDevice>(c);
}

}  // namespace devmodel

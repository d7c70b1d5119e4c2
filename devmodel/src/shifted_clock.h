// A device run on a clock `offset` ns ahead of its caller's: a model loaded
// from a state saved at T and opened at caller time T0 sees every time as
// t + (T - T0) and gives back deadlines less that (model_state.h), so its
// own times, an HDD's rotational position included, continue from T.
// Arithmetic is modulo 2^64, exact while both clocks stay below 2^63.
// Thread-safety: as Device.
#ifndef DEVMODEL_SRC_SHIFTED_CLOCK_H_
#define DEVMODEL_SRC_SHIFTED_CLOCK_H_

#include <memory>
#include <string>
#include <utility>

#include "devmodel/device.h"

namespace devmodel::internal {

class ShiftedClockDevice final : public Device {
 public:
  ShiftedClockDevice(std::unique_ptr<Device> inner, TimeNs offset)
      : inner_(std::move(inner)), offset_(offset) {}

  Completion Submit(const Request& r, TimeNs now) override {
    return Back(inner_->Submit(r, now + offset_));
  }
  Completion Poll(std::uint64_t tag, TimeNs now) override {
    return Back(inner_->Poll(tag, now + offset_));
  }
  bool Cancel(std::uint64_t tag) override { return inner_->Cancel(tag); }
  bool ScaleRateLimit(std::uint64_t factor_ppm) override {
    return inner_->ScaleRateLimit(factor_ppm);
  }
  bool deadlines_final() const override { return inner_->deadlines_final(); }
  std::uint64_t capacity_bytes() const override { return inner_->capacity_bytes(); }
  std::uint32_t logical_block_bytes() const override { return inner_->logical_block_bytes(); }
  std::uint32_t rotation_rate_rpm() const override { return inner_->rotation_rate_rpm(); }
  std::string CountersJson() const override { return inner_->CountersJson(); }
  std::uint64_t MemoryBytes() const override { return sizeof(*this) + inner_->MemoryBytes(); }
  bool SaveState(std::string* out, std::string* why) const override {
    return inner_->SaveState(out, why);
  }
  bool LoadState(StateReader* in, std::string* why) override { return inner_->LoadState(in, why); }

 private:
  Completion Back(Completion c) const {
    c.deadline_ns -= offset_;
    return c;
  }

  std::unique_ptr<Device> inner_;
  TimeNs offset_;
};

}  // namespace devmodel::internal

#endif  // DEVMODEL_SRC_SHIFTED_CLOCK_H_

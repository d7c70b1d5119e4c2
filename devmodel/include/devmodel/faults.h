// Faults on a schedule: a wrapper around any Device (SSD, HDD, cloud, zero)
// that makes it stall, run slow or fail reads of an LBA range for windows of
// virtual time, as drives and cloud volumes misbehave in incidents, or lose
// commands so that the host's timeout and recovery run, or fail as a whole
// until the host resets it. A stall or a slow window only moves deadlines; a
// media error also ends the request with Status::kMediaError, a timeout or a
// reset with Status::kLost. The windows are relative to an origin
// (the workload's start) that the caller sets; before it is set no fault
// applies. Thread-safety: as Device (callers serialize every call).
#ifndef DEVMODEL_FAULTS_H_
#define DEVMODEL_FAULTS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "devmodel/device.h"
#include "devmodel/tag_map.h"

namespace devmodel {

enum class FaultKind : std::uint8_t {
  // [s, e): a final deadline d with s <= d < e becomes e. The device
  // completes nothing in the window, then drains; its state is unchanged.
  kStall,
  // [s, e) factor k: a request submitted at t in [s, e) whose model deadline
  // is d completes at t + k * (d - t) (rounded down to a ns).
  kSlow,
  // [s, e) blocks [lba_start, lba_start + lba_count): a read (a write too
  // with `writes`) submitted at t in [s, e) that touches a block of the
  // range ends with Status::kMediaError at its model deadline + retry_ns
  // (the drive's own retries before it gives up). The model's state is
  // updated as for a request that succeeded.
  kMediaError,
  // [s, e) blocks [lba_start, lba_start + lba_count) (lba_count 0: every
  // block): a read (a write too with `writes`) submitted at t in [s, e) that
  // touches the range ends with Status::kLost at its model deadline: the
  // device never completes it, the host's timeout takes it back
  // (FaultyDevice::Cancel). The model's state is updated as for a request
  // that succeeded. A retry submitted after the window completes normally.
  kTimeout,
  // From s until the host resets the device (FaultyDevice::HostReset): the
  // device has failed, as on a power or link event. Every request whose
  // final deadline is at or after s (whatever its op, submitted before s or
  // after) ends with Status::kLost: it was held or submitted while the
  // device was down. The model's state is updated as for a request that
  // succeeded. A request submitted after the host's reset completes.
  // duration_ns is kForever; the fault's end is the host's reset.
  kReset,
};

// duration_ns of a fault that lasts until the end of the run.
inline constexpr TimeNs kForever = ~TimeNs{0};

const char* FaultKindName(FaultKind kind);

struct Fault {
  FaultKind kind = FaultKind::kStall;
  TimeNs at_ns = 0;        // start, ns after the origin
  TimeNs duration_ns = 0;  // > 0; kReset: kForever (it ends at the host's reset)
  // kSlow only: service time multiplier, > 1. Applied as an integer number
  // of millionths (factor_ppm), so deadlines are exact integers everywhere.
  std::uint64_t factor_ppm = 1000000;
  // kMediaError and kTimeout: the range in logical blocks (lba_count > 0;
  // kTimeout: 0 = every block) and whether writes fail (or are lost) too.
  // kMediaError only: the time the drive retries before it reports the error.
  std::uint64_t lba_start = 0;
  std::uint64_t lba_count = 0;
  TimeNs retry_ns = 0;
  bool writes = false;
};

// The faults of one device and what they did.
//   Apply order: every slow window that holds the submission time (in the
//   order given), then every stall window that holds the deadline (by start
//   time, so a deadline pushed into a later stall is pushed again).
class FaultSchedule {
 public:
  FaultSchedule() = default;
  explicit FaultSchedule(std::vector<Fault> faults);

  bool empty() const { return faults_.empty(); }
  const std::vector<Fault>& faults() const { return faults_; }

  // Windows start at origin + at_ns from now on. A later call moves them.
  void SetOrigin(TimeNs origin_ns) { origin_ = origin_ns; }
  std::optional<TimeNs> origin() const { return origin_; }

  // The media-error fault (index into faults()) that fails `r`, submitted
  // at `submit_ns` on a device of `block_bytes` logical blocks, or -1. The
  // first such fault in the order given counts it.
  int MediaError(const Request& r, TimeNs submit_ns, std::uint32_t block_bytes);
  // The same for the timeout fault that loses `r`, or -1.
  int Lost(const Request& r, TimeNs submit_ns, std::uint32_t block_bytes);
  // The reset fault that loses a request whose final deadline is
  // `deadline_ns` (counted), or -1: the first reset fault the host has not
  // reset yet, if it starts at or before the deadline.
  int LostToReset(TimeNs deadline_ns);
  // Whether a reset fault holds the device failed at `now_ns`: it started
  // at or before now_ns and the host has not reset the device since.
  bool Failed(TimeNs now_ns) const;
  // The host reset the device at `now_ns` (NVMe: CC.EN cleared). Ends every
  // reset fault that started by then (their end is now_ns); counted in
  // "host_resets" either way once the origin is set (resets before it are
  // the machine's own: boot, a restore, a backend's start, which differ
  // between ways of starting the same cell). Returns whether it ended one.
  bool HostReset(TimeNs now_ns);

  // The deadline of a request submitted at `submit_ns` whose model deadline
  // (final) is `deadline_ns`. REQUIRES: submit_ns <= deadline_ns. The result
  // is >= deadline_ns; counts each fault that moved it.
  TimeNs Apply(TimeNs submit_ns, TimeNs deadline_ns);

  // {"fault_origin_ns": n|null, "host_resets": n, "faults": [{"kind",
  //  "start_ns", "end_ns", "factor", "lba_start", "lba_count", "retry_ns",
  //  "writes", "requests"}]} (end_ns null for a fault that lasts to the end
  // of the run, or a reset the host has not ended), merged into
  // `json_object` (a JSON object text).
  std::string AddCounters(const std::string& json_object) const;

 private:
  // The first fault of `kind` whose window holds `submit_ns` and whose range
  // `r` touches (counted), or -1.
  int Match(FaultKind kind, const Request& r, TimeNs submit_ns, std::uint32_t block_bytes);

  // The start (absolute) of the reset fault faults_[i], or nullopt.
  std::optional<TimeNs> ResetStart(std::size_t i) const;
  // The first reset fault in reset_order_ not ended, or -1.
  int PendingReset() const;

  std::vector<Fault> faults_;             // as given
  std::vector<std::size_t> stall_order_;  // stalls by at_ns
  std::vector<std::size_t> reset_order_;  // by at_ns
  std::size_t resets_ended_ = 0;          // reset_order_[0, resets_ended_) are over
  std::vector<std::uint64_t> affected_;   // per fault, as given
  std::vector<std::optional<TimeNs>> ended_ns_;  // per fault: a reset's end
  std::uint64_t host_resets_ = 0;
  std::optional<TimeNs> origin_;
};

// A device with a fault schedule. Non-final deadlines (an HDD's "poll again
// at") pass unchanged; faults apply to final deadlines only, with the
// submission time kept per tag for slow windows. A poll of an unknown tag
// still gives {now, true}, in a stall too.
class FaultyDevice final : public Device {
 public:
  FaultyDevice(std::unique_ptr<Device> inner, FaultSchedule schedule);

  // The wrapper inside `device`, or nullptr if it is another Device.
  static FaultyDevice* Of(Device* device);

  void SetOrigin(TimeNs origin_ns) { schedule_.SetOrigin(origin_ns); }
  const FaultSchedule& schedule() const { return schedule_; }

  Completion Submit(const Request& r, TimeNs now) override;
  Completion Poll(std::uint64_t tag, TimeNs now) override;
  bool deadlines_final() const override { return inner_->deadlines_final(); }
  std::uint64_t capacity_bytes() const override { return inner_->capacity_bytes(); }
  std::uint32_t logical_block_bytes() const override { return inner_->logical_block_bytes(); }
  std::uint32_t rotation_rate_rpm() const override { return inner_->rotation_rate_rpm(); }
  std::string CountersJson() const override;
  std::uint64_t MemoryBytes() const override;

  // The host took request `tag` back before the device completed it (a
  // queue deletion or a controller reset): counted in "cancelled" if the
  // device still had it (not final yet, or lost), ignored otherwise, so a
  // tag cancelled twice counts once. The inner model forgets the tag too
  // (Device::Cancel). Returns whether it counted.
  bool Cancel(std::uint64_t tag) override;

  // FaultSchedule::Failed and HostReset. The host takes back what the
  // device held (Cancel) before or after it resets it, in either order.
  bool Failed(TimeNs now) const { return schedule_.Failed(now); }
  bool HostReset(TimeNs now) { return schedule_.HostReset(now); }

 private:
  std::unique_ptr<Device> inner_;
  FaultSchedule schedule_;
  struct Pending {
    TimeNs submit_ns;
    int media_error;  // MediaError() at submission
    int lost;         // Lost() at submission
  };
  // Applies the schedule to a final completion of a request submitted at
  // `submit_ns`, failed by fault `media_error` or lost by fault `lost` (-1:
  // none), or lost to a reset fault by its final deadline.
  Completion Finish(std::uint64_t tag, Completion c, TimeNs submit_ns, int media_error,
                    int lost, TimeNs now);

  TagMap<Pending> submitted_;                             // by tag, until final
  std::unordered_set<std::uint64_t> lost_;                // by tag, until cancelled
  std::uint64_t cancelled_ = 0;
};

}  // namespace devmodel

#endif  // DEVMODEL_FAULTS_H_

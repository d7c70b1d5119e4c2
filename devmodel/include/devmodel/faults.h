// Faults on a schedule: a wrapper around any Device (SSD, HDD, cloud, zero)
// that makes it stall, run slow or fail reads of an LBA range for windows of
// virtual time, as drives and cloud volumes misbehave in incidents, or lose
// commands so that the host's timeout and recovery run, or fail as a whole
// until the host resets it. A stall or a slow window only moves deadlines; a
// media error also ends the request with Status::kMediaError, a timeout or a
// reset with Status::kLost. A fault starts at a time after an origin (the
// workload's start) that the caller sets, or at the request that follows
// the first N the device received after it, or picks requests one by one
// with a seeded probability; before the origin is set no fault applies.
// Thread-safety: as Device (callers serialize every call).
#ifndef DEVMODEL_FAULTS_H_
#define DEVMODEL_FAULTS_H_

#include <cstdint>
#include <memory>
#include <cstddef>
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
  // is d completes at t + k * (d - t) (rounded down to a ns). On a device
  // with a rate limit (a cloud volume, Device::ScaleRateLimit) the limit is
  // lowered instead: such a request uses k times its share of the limits,
  // and the service times stay the model's.
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

// When a fault starts. Requests are numbered 1, 2, ... in the order the
// device receives them (Submit), from the origin on (submitted at or after
// it), whatever their op.
enum class FaultTrigger : std::uint8_t {
  // At origin + at_ns.
  kAt,
  // At the submission of request after_requests + 1: s is its time, and it
  // is the first request the window holds. Deadlines the model already gave
  // (requests submitted before it) stay as they were.
  kAfterRequests,
  // kMediaError and kTimeout only; no window (the origin to the end of the
  // run): each request the fault could fail (the op, the range) fails with
  // probability `probability`, independently. Request n is picked when
  // FaultPick(seed, index, n) < probability: the picks depend on the model's
  // seed, the fault's index in the schedule and the request numbers only.
  kProbability,
};

const char* FaultTriggerName(FaultTrigger trigger);

// A uniform number in [0, 1) (53 bits) for request `number` of fault
// `index` under `seed`: SplitMix64's finalizer applied to seed ^
// 0x6661756c74 ("fault") + the golden-ratio increment times (index + 1),
// then to that ^ number, top 53 bits. Pure, so a test (or a reader in
// another language) can recompute every pick.
double FaultPick(std::uint64_t seed, std::size_t index, std::uint64_t number);

// Most picks a probability fault lists in its counters (all are counted).
inline constexpr std::size_t kMaxListedPicks = 1000;

struct Fault {
  FaultKind kind = FaultKind::kStall;
  TimeNs at_ns = 0;        // kAt: start, ns after the origin
  TimeNs duration_ns = 0;  // > 0; kReset and kProbability: kForever (kReset ends at the host's reset)
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
  FaultTrigger trigger = FaultTrigger::kAt;
  std::uint64_t after_requests = 0;  // kAfterRequests: N, >= 0
  double probability = 0;            // kProbability: in (0, 1]
};

// The faults of one device and what they did.
//   Apply order: every slow window that holds the submission time (in the
//   order given), then every stall window that holds the deadline (by start
//   time, so a deadline pushed into a later stall is pushed again).
class FaultSchedule {
 public:
  FaultSchedule() = default;
  // `seed` draws the picks of kProbability faults (FaultPick).
  explicit FaultSchedule(std::vector<Fault> faults, std::uint64_t seed = 0);

  bool empty() const { return faults_.empty(); }
  const std::vector<Fault>& faults() const { return faults_; }

  // Windows start at origin + at_ns from now on, and requests are numbered
  // from 1 again. A later call moves them; a kAfterRequests fault that
  // already started keeps its start.
  void SetOrigin(TimeNs origin_ns);
  std::optional<TimeNs> origin() const { return origin_; }

  // A request arrives at `submit_ns`: its number (0 before the origin or
  // submitted before it). Starts the kAfterRequests faults it triggers.
  // Call once per request, first.
  std::uint64_t Arrive(TimeNs submit_ns);

  // What the faults do to request `r` numbered `number`, submitted at
  // `submit_ns` on a device of `block_bytes` logical blocks: the timeout
  // fault (index into faults()) that loses it, else the media-error fault
  // that fails it, -1 for none. The first match of each kind in the order
  // given; only the one that applies is counted (a lost request is not also
  // a media error). One pass over the faults.
  struct Verdict {
    int lost = -1;
    int media_error = -1;
  };
  Verdict Classify(const Request& r, TimeNs submit_ns, std::uint64_t number,
                   std::uint32_t block_bytes);
  // The reset fault that loses a request whose final deadline is
  // `deadline_ns` (counted), or -1: the first reset fault the host has not
  // reset yet, if it starts at or before the deadline.
  int LostToReset(TimeNs deadline_ns, std::uint64_t number, TimeNs submit_ns);
  // Whether a reset fault holds the device failed at `now_ns`: it started
  // at or before now_ns and the host has not reset the device since.
  bool Failed(TimeNs now_ns) const;
  // The host reset the device at `now_ns` (NVMe: CC.EN cleared). Ends every
  // reset fault that started by then (their end is now_ns); counted in
  // "host_resets" either way once the origin is set (resets before it are
  // the machine's own: boot, a restore, a backend's start, which differ
  // between ways of starting the same cell). Returns whether it ended one.
  bool HostReset(TimeNs now_ns);

  // Slow windows lower the device's rate limit instead of multiplying
  // service times (a cloud volume: FaultyDevice sets it).
  void set_slow_lowers_rate(bool v) { slow_lowers_rate_ = v; }
  bool slow_lowers_rate() const { return slow_lowers_rate_; }
  // With slow_lowers_rate(): the product of the factors (millionths) of the
  // slow windows that hold `submit_ns` (each counted), 1000000 for none.
  std::uint64_t RateFactorPpm(TimeNs submit_ns, std::uint64_t number);

  // The deadline of request `number` submitted at `submit_ns` whose model
  // deadline (final) is `deadline_ns`. REQUIRES: submit_ns <= deadline_ns.
  // The result is >= deadline_ns; counts each fault that moved it.
  TimeNs Apply(TimeNs submit_ns, TimeNs deadline_ns, std::uint64_t number = 0);

  // {"fault_origin_ns": n|null, "host_resets": n, "requests_since_origin":
  //  n, "faults": [{"kind", "trigger", "at_ns", "after_requests",
  //  "probability", "start_ns", "end_ns", "factor", "lba_start",
  //  "lba_count", "retry_ns", "writes", "requests", "first_request",
  //  "trigger_request", "picks"}]} (end_ns null for a fault that lasts to
  // the end of the run, or a reset the host has not ended; start_ns and
  // end_ns null for a kAfterRequests fault not started; a request is
  // {"request": number, "ns": its submission}), merged into `json_object`
  // (a JSON object text).
  std::string AddCounters(const std::string& json_object) const;

  // Heap bytes held (the listed picks).
  std::uint64_t MemoryBytes() const;

 private:
  struct Seen {
    std::uint64_t request;
    TimeNs ns;
  };
  // Whether fault i holds request `r` (its op and range; not its window).
  bool Touches(const Fault& f, const Request& r, std::uint32_t block_bytes) const;
  // Counts request `number` (submitted at `submit_ns`) against fault i.
  void Count(std::size_t i, std::uint64_t number, TimeNs submit_ns);
  // The window of fault i on the virtual clock, or nullopt before it is
  // known (no origin; a kAfterRequests fault not triggered). end is kForever
  // for a fault without an end.
  std::optional<TimeNs> Start(std::size_t i) const;
  TimeNs End(std::size_t i, TimeNs start) const;
  bool Holds(std::size_t i, TimeNs t) const;
  // stall_order_ by start (unknown starts last).
  void SortStalls();
  // The first reset fault (by start) not ended, or -1.
  int PendingReset() const;

  std::vector<Fault> faults_;             // as given
  std::uint64_t seed_ = 0;
  std::vector<std::size_t> stall_order_;  // stalls by start
  std::vector<std::size_t> resets_;       // reset faults
  std::vector<std::size_t> after_;        // kAfterRequests faults not triggered
  std::vector<std::uint64_t> affected_;   // per fault, as given
  std::vector<std::optional<TimeNs>> ended_ns_;    // per fault: a reset's end
  std::vector<std::optional<Seen>> triggered_;     // per fault: kAfterRequests's start
  std::vector<std::optional<Seen>> first_;         // per fault: the first request counted
  std::vector<std::vector<Seen>> picks_;           // per fault: kProbability's, listed
  std::uint64_t host_resets_ = 0;
  std::uint64_t arrived_ = 0;  // requests numbered since the origin
  bool slow_lowers_rate_ = false;
  std::optional<TimeNs> origin_;
};

// A device with a fault schedule. Non-final deadlines (an HDD's "poll again
// at") pass unchanged; faults apply to final deadlines only, with the
// submission time kept per tag for slow windows. A poll of an unknown tag
// still gives {now, true}, in a stall too.
class FaultyDevice final : public Device {
 public:
  // A slow fault lowers the rate limit of an `inner` that has one
  // (Device::ScaleRateLimit) instead of multiplying its service times.
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

  // The inner model's state (Device::SaveState); refused while a request is
  // held (not final, or lost and not cancelled). The schedule's bookkeeping
  // is not part of it (src/model_state.h).
  bool SaveState(std::string* out, std::string* why) const override;
  bool LoadState(internal::StateReader* in, std::string* why) override;
  // Runs the inner model on a clock `offset` ns ahead of the caller's
  // (modulo 2^64): a model loaded from a state saved at T and opened at T0
  // gets T - T0 (src/model_state.h). The schedule stays on the caller's.
  void SetInnerClockOffset(TimeNs offset);

 private:
  std::unique_ptr<Device> inner_;
  FaultSchedule schedule_;
  struct Pending {
    TimeNs submit_ns;
    std::uint64_t number;  // FaultSchedule::Arrive()
    FaultSchedule::Verdict verdict;  // at submission
  };
  // Applies the schedule to a final completion of a request `p` (failed by
  // a media error or lost to a timeout by its verdict, or lost to a reset
  // fault by its final deadline).
  Completion Finish(std::uint64_t tag, Completion c, const Pending& p, TimeNs now);

  TagMap<Pending> submitted_;                             // by tag, until final
  std::unordered_set<std::uint64_t> lost_;                // by tag, until cancelled
  std::uint64_t cancelled_ = 0;
  std::uint64_t rate_factor_ppm_ = 1000000;  // last given to inner_->ScaleRateLimit
};

}  // namespace devmodel

#endif  // DEVMODEL_FAULTS_H_

// devmodel::Device: the interface every timing model implements (SSD, HDD,
// cloud volume, zero-latency). A device turns a request submitted at virtual
// time `now` into a completion deadline and updates its internal state.
// Thread-safety: a Device is not thread-safe; callers serialize all calls on
// one instance (QEMU holds its big lock). Distinct instances share nothing.
#ifndef DEVMODEL_DEVICE_H_
#define DEVMODEL_DEVICE_H_

#include <cstdint>
#include <string>

namespace devmodel {

namespace internal {
class StateReader;  // src/model_state.h
}  // namespace internal

// Nanoseconds of virtual time (QEMU_CLOCK_VIRTUAL). Models never read a clock;
// every call carries the current time.
using TimeNs = std::uint64_t;

// Deadlines are exact while `now` stays below this (2^53 ns, 104 days of
// virtual time); beyond it they stay >= now but may lose their meaning.
inline constexpr TimeNs kExactTimeLimitNs = TimeNs{1} << 53;

// Longest read or write Check() accepts: more than any NVMe (MDTS) or ATA
// command can carry, so only a broken caller meets it. Trims have no limit.
inline constexpr std::uint64_t kMaxTransferBytes = std::uint64_t{1} << 30;

enum class Op : std::uint8_t { kRead = 0, kWrite = 1, kFlush = 2, kTrim = 3 };

struct Request {
  Op op = Op::kRead;
  std::uint64_t offset_bytes = 0;  // multiple of logical_block_bytes()
  std::uint64_t length_bytes = 0;  // multiple of logical_block_bytes(); 0 for flush
  std::uint32_t queue_id = 0;      // NVMe SQ id / AHCI port; SsdConfig::arbitration
  // Caller's identity for the request, echoed to Poll(). Must be unique among
  // the caller's requests whose completion was not final (a pointer works).
  std::uint64_t tag = 0;
};

// How a request ends. A front end reports kMediaError with its protocol's
// unrecovered-read-error status (NVMe: SCT 2h / SC 81h on a read). kLost:
// the device never completes the request (a timeout or reset fault);
// deadline_ns is when it would have, and the host's own timeout has to take
// it back.
enum class Status : std::uint8_t { kOk = 0, kMediaError = 1, kLost = 2 };

struct Completion {
  TimeNs deadline_ns = 0;  // absolute virtual time
  // true: the request completes at deadline_ns. false: deadline_ns is the time
  // at which the model makes its next decision (e.g. an HDD picking the next
  // command by shortest positioning time); the caller calls Poll(tag, now) at
  // that time and gets either the final deadline or another poll time.
  bool final = true;
  Status status = Status::kOk;  // meaningful once final
};

class Device {
 public:
  virtual ~Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // Returns nullptr if `r` is acceptable for this device, else a static
  // description of what is wrong (out of range, misaligned, unknown op, a
  // read or write longer than kMaxTransferBytes).
  const char* Check(const Request& r) const;

  // REQUIRES: Check(r) == nullptr; now >= now of every earlier Submit/Poll.
  virtual Completion Submit(const Request& r, TimeNs now) = 0;

  // For a request whose Completion was not final. REQUIRES: now >= the
  // deadline_ns last returned for `tag`. Unknown tags return {now, true}.
  virtual Completion Poll(std::uint64_t tag, TimeNs now);

  // The host took request `tag` back before its completion was final (a
  // timeout's queue deletion or controller reset): the model forgets the tag,
  // so a later Poll of it is an unknown tag and the tag can be reused. Work
  // the model already booked for it stays done (the device did it). Returns
  // whether the model still held the tag.
  virtual bool Cancel(std::uint64_t /*tag*/) { return false; }

  // A device with a rate limit (a cloud volume's IOPS and bandwidth
  // throttle) charges each request submitted from now on `factor_ppm` /
  // 1000000 times its share of the limits (the limits divided by it) until
  // the next call; 1000000 is the device's own limit. Returns false, and
  // changes nothing, on a device without a rate limit.
  // REQUIRES: factor_ppm >= 1000000.
  virtual bool ScaleRateLimit(std::uint64_t /*factor_ppm*/) { return false; }

  // True when Submit() always returns final completions (every model except
  // an HDD that reorders its queue).
  virtual bool deadlines_final() const { return true; }

  virtual std::uint64_t capacity_bytes() const = 0;
  virtual std::uint32_t logical_block_bytes() const = 0;
  // ATA "nominal media rotation rate": 1 = non-rotating, else revolutions/min.
  virtual std::uint32_t rotation_rate_rpm() const { return 1; }

  // Counters as one JSON object (keys carry units, e.g. "nand_bytes_written").
  virtual std::string CountersJson() const = 0;

  // Heap bytes held by the model's state (approximate, excludes malloc slack).
  virtual std::uint64_t MemoryBytes() const = 0;

  // The model's whole state (src/model_state.h says what it is per model),
  // appended to *out. False with *why, and *out unchanged, when it cannot be
  // saved exactly now (a request held; a model that keeps no such state).
  virtual bool SaveState(std::string* /*out*/, std::string* why) const {
    *why = "this model cannot save its state";
    return false;
  }
  // On a model just built from the same configuration and not used yet (an
  // SSD built without its precondition): takes the state SaveState wrote
  // from `in`. False with *why on data that does not fit this model (the
  // model is then unusable: the caller discards it).
  virtual bool LoadState(internal::StateReader* /*in*/, std::string* why) {
    *why = "this model cannot load a state";
    return false;
  }

 protected:
  Device() = default;
};

}  // namespace devmodel

#endif  // DEVMODEL_DEVICE_H_

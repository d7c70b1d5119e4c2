// A model's whole state, saved after a run and loaded into a model opened
// from the same profile, so that a run (a database's load) can be done once
// and every later run starts from the drive it left. Declares the byte
// stream the models write their state to (StateWriter) and read it from
// (StateReader); the file around it is model_state_file.h's.
//
// What the state of each model is (every member that a later request's
// deadline or a counter can depend on; caches of derived values are not):
//  - SSD (ssd_model.h, ftl.h): the FTL's mapping (L2P, rebuilt P2L) and
//    block state (valid counts and recency keys, free lists, open host and
//    GC blocks and their write pointers, the victim in collection and its
//    cursor, the recency clock, the host program unit being filled: data
//    still in the write buffer); the timelines (per die: busy-until, host
//    read end, booked program/erase operations and their shift, suspends of
//    the one in progress, host programs not yet durable; per channel: the
//    write-side bookings and the host transfer end; host link both ways;
//    per plane: read ends); admission (the FIFO's ends, or both pipelines'
//    slots and per-queue ends); read transfers still queued (those of a read
//    the host cancelled); the write buffer's releases and units in use; SLC
//    units in use per die (the folding backlog); background GC's due flag
//    and the idle point (last completion) that times GC and folds; the read
//    retry generator; the counters and the precondition's baseline.
//  - HDD (hdd.cc): head position (cylinder, head) and when the mechanism
//    frees; the cache segments (ranges, read-ahead progress, LRU order, the
//    active one); the queue (destages of dirty data, commands served but
//    not reported); dirty bytes and their releases; decided completions and
//    flushes not yet reported; the counters.
//  - Cloud volume (cloud.cc): burst credits and their refill time, the IOPS
//    and bandwidth throttles' theoretical arrival times, the jitter
//    generator, the counters; then its backing device's state.
//  - Zero and fixed-latency: nothing but the counters.
//  - C ABI (c_api.cc): service times per op, media errors and lost
//    requests. Not saved: a profile's fault schedule and its bookkeeping
//    (origin, request numbers, host resets, cancellations): a run's faults
//    are timed from that run's origin (devmodel_set_origin), so a loaded
//    model starts them as a newly opened one does.
//
// Time. Every time the models hold is absolute virtual time; many matter
// only relative to later requests (busy-until times, the idle point that
// starts background GC and SLC folds, credit refill), but an HDD's
// rotational position is a function of absolute time. So the state keeps
// the saving model's times as they are, with the save instant T, and a
// model loaded at caller time T0 sees every caller time t as T + (t - T0)
// and gives back deadlines as d - (T - T0): to the model nothing happened
// between the save and the load, whatever T0 is, so the loaded model is
// exactly the saving one continued from T (one addition per call). Counters
// that are absolute times (a cloud volume's credits_time_ns) stay on the
// saving run's clock.
//
// Quiescence. A state is saved only when no request is held: every
// request's completion is final and at or before T (the caller completed
// it), no lost request waits for a cancel. Work the drive does on its own
// (programs of buffered data, GC, SLC folds, HDD destages, credit refill) is
// part of the state and goes on after the load exactly as it would have:
// booked work stays booked, and idle-time work is timed from the saved idle
// point. A save that cannot be exact (a request held, a slow fault's lowered
// rate limit in effect) is refused with the reason; nothing is approximated.
//
// Thread-safety: none (a writer or reader belongs to one save or load).
#ifndef DEVMODEL_SRC_MODEL_STATE_H_
#define DEVMODEL_SRC_MODEL_STATE_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace devmodel::internal {

// Appends 8-byte words (host byte order) to a string.
class StateWriter {
 public:
  explicit StateWriter(std::string* out) : out_(out) {}
  void Put(std::uint64_t v) { out_->append(reinterpret_cast<const char*>(&v), 8); }
  void PutDouble(double v) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, 8);
    Put(bits);
  }
  // Length in bytes, then the bytes padded to whole words with zeros.
  void PutBytes(std::string_view bytes) {
    Put(bytes.size());
    out_->append(bytes);
    out_->append((8 - bytes.size() % 8) % 8, '\0');
  }

 private:
  std::string* out_;
};

// Reads what a StateWriter wrote. Past the end it returns 0 and remembers
// the overrun; the caller checks ok() before it uses what it read.
class StateReader {
 public:
  explicit StateReader(std::string_view in) : in_(in) {}
  std::uint64_t Get() {
    if (in_.size() < 8) {
      overrun_ = true;
      in_ = {};
      return 0;
    }
    std::uint64_t v;
    std::memcpy(&v, in_.data(), 8);
    in_.remove_prefix(8);
    return v;
  }
  double GetDouble() {
    const std::uint64_t bits = Get();
    double v;
    std::memcpy(&v, &bits, 8);
    return v;
  }
  // A count of items each taking at least `min_words` words: 0 with an
  // overrun if fewer words are left than that, so a damaged count never
  // makes the caller allocate more than the input holds.
  std::uint64_t GetCount(std::uint64_t min_words = 1) {
    const std::uint64_t n = Get();
    if (min_words != 0 && n > in_.size() / 8 / min_words) {
      overrun_ = true;
      in_ = {};
      return 0;
    }
    return n;
  }
  std::string_view GetBytes() {
    const std::uint64_t n = Get();
    const std::uint64_t padded = n + (8 - n % 8) % 8;
    if (overrun_ || padded < n || padded > in_.size()) {
      overrun_ = true;
      in_ = {};
      return {};
    }
    const std::string_view bytes = in_.substr(0, n);
    in_.remove_prefix(padded);
    return bytes;
  }
  bool ok() const { return !overrun_; }
  bool AtEnd() const { return !overrun_ && in_.empty(); }
  std::string_view rest() const { return in_; }

 private:
  std::string_view in_;
  bool overrun_ = false;
};

}  // namespace devmodel::internal

#endif  // DEVMODEL_SRC_MODEL_STATE_H_

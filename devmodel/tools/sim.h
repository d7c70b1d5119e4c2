// A fio-like closed-loop workload run directly on a device model's virtual
// clock, through the C ABI as QEMU's glue calls it: each request is submitted
// at `now`, completes at the deadline the model returns (polled again while
// not final), and its job slot issues the next request at that completion
// time. Used to evaluate a profile in seconds of host time where a guest run
// costs minutes (blklab fit); it models the device only, no host I/O path.
// Deterministic: no clock is read, every random choice comes from the seed.
// Thread-safety: functions are reentrant; a devmodel_t is used by one call.
#ifndef DEVMODEL_TOOLS_SIM_H_
#define DEVMODEL_TOOLS_SIM_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "devmodel/devmodel.h"

namespace devmodel::sim {

// One job, in fio's terms; parsed from "NAME:key=value,key=value".
struct JobSpec {
  std::string name;
  bool random = true;         // rw=rand*: uniform offsets, with replacement (norandommap)
  std::uint32_t read_pct = 100;  // share of reads: rw=randread 100, randwrite 0, randrw rwmixread
  std::uint64_t block_bytes = 4096;  // bs
  std::uint32_t iodepth = 1;         // requests in flight (the closed loop's slots)
  // rate=READ,WRITE in bytes/s (fio's rate); 0 = no limit. Requests of a
  // direction are paced: the k-th may be issued no earlier than k x bs / rate.
  // A slot's op is drawn when it frees, so in a mixed job a slot that drew a
  // paced direction waits for it (fio would issue the other direction).
  std::uint64_t read_rate_bytes_s = 0;
  std::uint64_t write_rate_bytes_s = 0;
  std::uint64_t offset_bytes = 0;  // start of the region the job addresses
  std::uint64_t size_bytes = 0;    // its length; 0 = to the end of the device
  // io_size: bytes the job issues in all, then it ends, as fio without
  // time_based (a sequential job of io_size = size writes its region once:
  // a fill); 0 = it runs until the runtime ends.
  std::uint64_t io_size_bytes = 0;
  std::uint32_t queue_id = 0;      // NVMe submission queue; 0 = the job's index + 1
  std::string text;                // as given, for the output
};

struct SimSpec {
  std::uint64_t seed = 1;
  std::uint64_t ramp_ns = 0;     // run but not measured (fio ramp_time)
  std::uint64_t runtime_ns = 0;  // measured; requests completing in (ramp, ramp + runtime]
  // fio's log_avg_msec for a bandwidth log (write_bw_log): bytes completed
  // per interval of this length from time 0, ramp included; 0 = no log.
  std::uint64_t log_interval_ns = 0;
  std::vector<JobSpec> jobs;
};

// Completion latencies in fio's histogram (FIO_IO_U_PLAT_BITS = 6: 64
// buckets per power of two of ns, values below 128 ns exact). A percentile is
// the middle of its bucket, as fio prints it: within 1/128 of the true value.
class LatencyHistogram {
 public:
  static constexpr int kBits = 6;
  static constexpr int kPerGroup = 1 << kBits;
  static constexpr int kBuckets = 29 * kPerGroup;  // up to 2^34 ns (17 s); above: the last

  void Add(std::uint64_t ns);
  // fio's definition: the value of the first bucket at which the count so
  // far reaches pct / 100 x the total. REQUIRES count() > 0.
  std::uint64_t Percentile(double pct) const;
  std::uint64_t count() const { return count_; }

  static int BucketOf(std::uint64_t ns);
  static std::uint64_t BucketValue(int bucket);  // the bucket's middle, ns

 private:
  std::array<std::uint64_t, kBuckets> buckets_{};
  std::uint64_t count_ = 0;
};

// One direction's measured figures.
struct DirectionStats {
  std::uint64_t ios = 0;
  std::uint64_t bytes = 0;
  std::uint64_t clat_sum_ns = 0;
  std::uint64_t clat_min_ns = 0;
  std::uint64_t clat_max_ns = 0;
  LatencyHistogram clat;
};

struct JobResult {
  DirectionStats read, write;
  // SimSpec::log_interval_ns != 0: bytes (both directions) of the requests
  // completing in each interval (i x L, (i + 1) x L], up to the last.
  std::vector<std::uint64_t> interval_bytes;
  std::uint64_t end_ns = 0;  // when its last request completed
  bool finished = false;     // io_size reached and every request completed
};

// Parses "NAME:key=value,..." (keys: rw, bs, iodepth, rwmixread, rate,
// offset, size, io_size, queue). Returns false and sets *error on a bad spec.
bool ParseJob(const std::string& text, JobSpec* job, std::string* error);

// Parses a fio time ("30s", "500ms", "250us", "2m"; no unit = s) into ns.
bool ParseTime(const std::string& text, std::uint64_t* ns, std::string* error);

// Runs every job of `spec` at once on `model` from virtual time 0.
// REQUIRES a freshly opened model (its clock has not moved past 0), or one
// opened from a saved state at time 0 (devmodel_open_state). Returns
// false and sets *error when the model refuses a request or a job does not
// fit the device.
bool Run(devmodel_t* model, const SimSpec& spec, std::vector<JobResult>* results,
         std::string* error);
// Run, then completes the requests still in flight at the end of the
// runtime (polled to final, not measured, as fio does not count them) and
// sets *idle_ns to when the model holds none: the later of the runtime's
// end and the last completion, the instant to save its state at
// (devmodel_save_state).
bool RunAndDrain(devmodel_t* model, const SimSpec& spec, std::vector<JobResult>* results,
                 std::uint64_t* idle_ns, std::string* error);

// The results as fio-style JSON: {"devmodel-sim": {...}, "jobs": [{"jobname",
// "read": {"total_ios", "io_bytes", "bw_bytes", "iops", "clat_ns": {"min",
// "max", "mean", "percentile": {"50.000000": ...}}}, "write": ...}],
// "counters": ...}. `counters` is the model's JSON after the run. A job
// that finished (io_size) before ramp + runtime is measured over (ramp, its
// end], as fio's runtime is the job's own.
std::string ResultJson(const std::string& profile, const SimSpec& spec,
                       const std::vector<JobResult>& results, const std::string& counters);

// A job's bandwidth log as fio writes it with log_avg_msec (one line per
// interval: "msec, KiB/s, DDIR, 0, 0", DDIR 1 for a job that writes and 0
// for a read-only one; the interval's mean rate rounded to a KiB/s; the
// last line at the job's end, its rate over the partial interval).
// REQUIRES spec.log_interval_ns != 0 and a whole number of ms.
std::string BandwidthLog(const SimSpec& spec, const JobSpec& job, const JobResult& result);

}  // namespace devmodel::sim

#endif  // DEVMODEL_TOOLS_SIM_H_

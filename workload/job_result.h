// JobResult: everything one job measured, filled by the job's process and
// read by the parent after the job ended. It is trivially copyable with no
// pointers, so it can live in memory shared between the processes (see
// main.cc); derived numbers (bandwidth, percentiles) are computed at output
// time from it and the JobSpec.
// Thread-safety: one writer (the job) until it exits, then readers.
#ifndef BLKGEN_JOB_RESULT_H_
#define BLKGEN_JOB_RESULT_H_

#include <cstdint>
#include <type_traits>

#include "histogram.h"
#include "job_spec.h"
#include "running_stat.h"
#include "verify.h"

namespace blkgen {

// Buckets of fio's "iodepth_level", "iodepth_submit" and "iodepth_complete".
inline constexpr int kDepthBuckets = 7;

// Interval of fio's bandwidth and IOPS samples (bwavgtime, iopsavgtime).
inline constexpr uint64_t kBwSampleIntervalNs = 500ULL * 1000 * 1000;

struct DirResult {
  uint64_t io_bytes = 0;   // bytes transferred in the measured phase
  uint64_t total_ios = 0;  // completed I/Os, short ones included
  uint64_t short_ios = 0;  // completed with fewer bytes than asked
  uint64_t drop_ios = 0;   // always 0: blkgen does not drop I/Os
  RunningStat slat_ns;     // prepare -> handed to the kernel (async engines only)
  RunningStat clat_ns;     // handed to the kernel -> completion seen
  RunningStat lat_ns;      // prepare -> completion seen
  RunningStat bw_kib_s;    // one sample per kBwSampleIntervalNs, KiB/s
  RunningStat iops;        // one sample per kBwSampleIntervalNs, I/O per s
  LatencyHistogram clat_hist;
  LatencyHistogram lat_hist;
};

// fio's "sync" section: fsync/fdatasync requests (latency = lat_ns).
struct SyncResult {
  uint64_t total_ios = 0;
  RunningStat lat_ns;
  LatencyHistogram lat_hist;
};

// One verify mismatch: where, what the header should have said and what it
// said (see verify.h; expected.crc32c is computed over the data read).
struct VerifyMismatch {
  uint64_t offset = 0;
  bool writer_checked = false;  // expected job/generation known
  // The block had been trimmed: `expected` is the block as last written
  // before the trim; zeros (and with trim_verify_zero=0 ones or that block)
  // would have passed.
  bool trimmed = false;
  BlockIdentity expected;
  BlockIdentity found;
};

inline constexpr int kMaxVerifyMismatches = 16;  // kept in detail; all are counted

struct VerifyResult {
  uint64_t checked = 0;       // blocks read and checked (both phases)
  uint64_t mismatches = 0;    // checks that failed
  uint64_t unchecked = 0;     // blocks read that this job never wrote (rw/randrw)
  uint64_t verify_reads = 0;  // reads of the verify phase
  // Reads of trimmed blocks (counted in `checked` too) by what they held.
  uint64_t trimmed_checked = 0;
  uint64_t trimmed_zeros = 0;
  uint64_t trimmed_ones = 0;
  uint64_t trimmed_unchanged = 0;  // the block as last written
  uint64_t verify_phase_ns = 0;    // time spent in the verify phase
  uint32_t recorded = 0;           // entries used in `first`
  VerifyMismatch first[kMaxVerifyMismatches];
};

// A replay (read_iolog): how late each I/O started against its due time
// (the recorded time since the first I/O, scaled). An I/O is never started
// early; it starts late when the queue is full (iodepth) or the process
// wakes late.
struct ReplayResult {
  uint64_t ios = 0;          // I/Os (and syncs) started
  uint64_t late_max_ns = 0;  // largest start - due
  uint64_t late_sum_ns = 0;  // sum of start - due (mean = sum / ios)
  uint64_t late_over_100us = 0;  // I/Os that started more than 100 us late
};

// One time series interval (blkgen_log_interval): I/Os and bytes completed
// in it and clat percentiles of those I/Os, per direction.
struct SeriesPoint {
  uint64_t end_ns = 0;  // end of the interval, ns since the measured phase began
  uint64_t ios[kNumDirs] = {};
  uint64_t bytes[kNumDirs] = {};
  uint64_t clat_p50_ns[kNumDirs] = {};
  uint64_t clat_p99_ns[kNumDirs] = {};
};

struct JobResult {
  int32_t error = 0;           // errno of the first failure; 0 = none
  char error_text[256] = {};   // message of the first failure, NUL-terminated
  // continue_on_error: I/O errors the job went on past, and the first's errno.
  uint64_t total_err = 0;
  int32_t first_error = 0;
  bool measured = false;       // the measured phase (after ramp_time) began
  uint64_t runtime_ns = 0;     // measured phase: end of ramp -> last completion
  uint64_t elapsed_ns = 0;     // start of I/O (ramp included) -> end
  uint32_t iodepth = 0;        // depth the engine ran with
  uint32_t engine_flags = 0;   // engine-specific setup flags (io_uring: IORING_SETUP_*)
  uint64_t region_offset = 0;  // bytes; the region the job used
  uint64_t region_bytes = 0;
  DirResult dir[kNumDirs];
  // getrusage(RUSAGE_SELF) of the job's process over the measured phase.
  uint64_t usr_ns = 0;
  uint64_t sys_ns = 0;
  uint64_t ctx = 0;   // voluntary + involuntary context switches
  // Of ctx, the involuntary ones: the job's thread preempted while it could
  // run (by a kworker it woke, say), not asleep waiting for I/O.
  uint64_t ctx_involuntary = 0;
  uint64_t majf = 0;  // major page faults
  uint64_t minf = 0;  // minor page faults
  // Per submitted I/O, by I/Os in use when it was committed: 1, 2-3, 4-7,
  // ..., >=64.
  uint64_t depth_map[kDepthBuckets] = {};
  // Per Commit() / Reap() call, by batch size: 0, 1-4, 5-8, 9-16, ..., >64.
  uint64_t submit_map[kDepthBuckets] = {};
  uint64_t complete_map[kDepthBuckets] = {};
  SyncResult sync;
  VerifyResult verify;
  ReplayResult replay;
  uint64_t randseed = 0;              // seed the job ran with
  uint64_t startdelay_ns = 0;         // delay the job waited before starting
  uint32_t series_points = 0;         // entries of the job's SeriesPoint array used
  bool series_truncated = false;      // more intervals than room for them
  uint8_t cgroup_created_levels = 0;  // trailing components of `cgroup` blkgen created
};

static_assert(std::is_trivially_copyable_v<JobResult>);

}  // namespace blkgen

#endif  // BLKGEN_JOB_RESULT_H_

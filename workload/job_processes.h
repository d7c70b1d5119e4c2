// Runs jobs the way fio does by default: each job in its own process (so a
// job can be placed in its own cgroup: the io controller is per process),
// all released together once every job finished its setup. Results come back
// through memory shared with the children. Around the run the parent samples
// the jobs' disks (fio's disk_util) and afterwards removes the cgroups the
// jobs created (unless cgroup_nodelete).
// Thread-safety: call from the main thread of a single-threaded process.
#ifndef BLKGEN_JOB_PROCESSES_H_
#define BLKGEN_JOB_PROCESSES_H_

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "block_device.h"
#include "job_result.h"
#include "job_runner.h"
#include "job_spec.h"

namespace blkgen {

// Objects of type T in an anonymous shared mapping, value-initialised,
// visible to children forked after construction. Pages are only committed
// when touched (MAP_NORESERVE), so generous sizes cost address space only.
template <class T>
class SharedArray {
 public:
  // `construct`: placement-new every element (else they keep the mapping's
  // zero bytes; only for types whose all-zero bytes are their default).
  explicit SharedArray(size_t count, bool construct = true);
  SharedArray(const SharedArray&) = delete;
  SharedArray& operator=(const SharedArray&) = delete;
  ~SharedArray();

  bool ok() const { return data_ != nullptr; }
  std::span<T> span() { return {data_, count_}; }

 private:
  T* data_ = nullptr;  // owned mapping
  size_t count_ = 0;
};

using SharedResults = SharedArray<JobResult>;

// Room for the time series of each job: one SeriesPoint per
// blkgen_log_interval of its runtime (or a fixed allowance without one).
class SharedSeries {
 public:
  explicit SharedSeries(const std::vector<JobSpec>& jobs);
  bool ok() const { return points_.ok(); }
  std::span<SeriesPoint> of(size_t job) { return points_.span().subspan(first_[job], count_[job]); }

 private:
  std::vector<size_t> first_, count_;
  SharedArray<SeriesPoint> points_;
};

// Gives every job that has neither randseed nor randrepeat=1 a seed from
// getrandom(2), so the output records the seed it ran with (as fio, the
// sequence then differs between runs).
void ResolveSeeds(std::vector<JobSpec>* jobs);

struct RunOutcome {
  std::vector<DiskUtil> disk_util;  // one per disk the jobs used, in job order
  std::vector<std::string> warnings;
};

// Forks one process per job, runs it and waits for all. Failures of a job
// (setup, I/O, a crashed process) are recorded in its result.
// REQUIRES: results.size() == jobs.size(); stdio flushed by the caller.
RunOutcome RunJobsInProcesses(const std::vector<JobSpec>& jobs, std::span<JobResult> results,
                              SharedSeries* series, const RunContext& context);

}  // namespace blkgen

#endif  // BLKGEN_JOB_PROCESSES_H_

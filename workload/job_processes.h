// Runs jobs the way fio does by default: each job in its own process (so a
// job can later be placed in its own cgroup: the io controller is per
// process), all released together once every job finished its setup. Results
// come back through memory shared with the children.
// Thread-safety: call from the main thread of a single-threaded process.
#ifndef BLKGEN_JOB_PROCESSES_H_
#define BLKGEN_JOB_PROCESSES_H_

#include <cstddef>
#include <span>
#include <vector>

#include "job_result.h"
#include "job_spec.h"

namespace blkgen {

// JobResults in an anonymous shared mapping, value-initialised, visible to
// children forked after construction.
class SharedResults {
 public:
  explicit SharedResults(size_t count);
  SharedResults(const SharedResults&) = delete;
  SharedResults& operator=(const SharedResults&) = delete;
  ~SharedResults();

  bool ok() const { return results_ != nullptr; }
  std::span<JobResult> results() { return {results_, count_}; }

 private:
  JobResult* results_ = nullptr;  // owned mapping
  size_t count_ = 0;
};

// Forks one process per job, runs it and waits for all. Failures of a job
// (setup, I/O, a crashed process) are recorded in its result.
// REQUIRES: results.size() == jobs.size(); stdio flushed by the caller.
void RunJobsInProcesses(const std::vector<JobSpec>& jobs, std::span<JobResult> results);

}  // namespace blkgen

#endif  // BLKGEN_JOB_PROCESSES_H_

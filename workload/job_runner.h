// JobRunner: runs one job: opens its target, sets up the engine and a fixed
// pool of requests and buffers, then keeps `iodepth` I/Os in flight until the
// pattern ends or the runtime is up, recording into a JobResult. Nothing is
// allocated per I/O; the clock is read once per batch of events (after a
// submit, after a reap; a sync I/O's completion time is the next one's
// start time).
// Thread-safety: one job per runner, one thread.
#ifndef BLKGEN_JOB_RUNNER_H_
#define BLKGEN_JOB_RUNNER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "engine.h"
#include "io_pattern.h"
#include "job_result.h"
#include "job_spec.h"
#include "status.h"
#include "target.h"

namespace blkgen {

class JobRunner {
 public:
  // `result` is written by Prepare() and Run(); REQUIRES: it outlives the
  // runner and starts value-initialised. `job_index` is the job's position
  // in the command line (it seeds the job's random streams).
  JobRunner(const JobSpec& spec, uint32_t job_index, JobResult* result);
  JobRunner(const JobRunner&) = delete;
  JobRunner& operator=(const JobRunner&) = delete;
  ~JobRunner();

  // Opens the target and sets up the engine and buffers. On failure the
  // error is also recorded in the result.
  Status Prepare();

  // Runs the job. REQUIRES: Prepare() succeeded. I/O errors stop the job;
  // they are recorded in the result (partial results stay valid) and
  // returned.
  Status Run();

 private:
  template <class E>
  void Loop(E& engine);
  void Complete(IoRequest* req, uint64_t now_ns);
  void OnBatchDone(uint64_t now_ns);
  void BeginMeasuring();
  void TakeBwSample(uint64_t now_ns);
  void RecordError(int err, const std::string& text);
  void SnapshotUsage(bool at_end);

  const JobSpec spec_;
  const uint32_t job_index_;
  JobResult* const result_;

  Target target_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<IoPattern> pattern_;
  uint32_t depth_ = 1;
  uint8_t* buffers_ = nullptr;  // depth_ * max bs bytes, 4096-aligned; owned
  std::vector<IoRequest> requests_;
  std::vector<IoRequest*> free_;    // requests not in flight
  std::vector<IoRequest*> staged_;  // queued, not yet handed to the kernel
  std::vector<IoRequest*> events_;  // completions of one Reap()

  bool record_slat_ = false;  // async engines only, as fio
  bool issuing_ = true;
  bool measuring_ = false;
  uint64_t start_ns_ = 0;          // first I/O prepared
  uint64_t measure_start_ns_ = 0;  // start_ns_ + ramp
  uint64_t deadline_ns_ = 0;       // measure start + runtime; 0 = none
  uint64_t last_event_ns_ = 0;
  // State of the bandwidth sampler: totals at the previous sample.
  uint64_t sample_start_ns_ = 0;
  uint64_t sample_bytes_[kNumDirs] = {};
  uint64_t sample_ios_[kNumDirs] = {};
  // getrusage at the start of the measured phase.
  uint64_t usage_start_[5] = {};
};

}  // namespace blkgen

#endif  // BLKGEN_JOB_RUNNER_H_

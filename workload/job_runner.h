// JobRunner: runs one job in the calling process. Prepare() joins the job's
// cgroup and I/O priority, opens its target, sets up the engine and a fixed
// pool of requests and buffers; Run() keeps I/O in flight the way fio's
// do_io() does (so the kernel sees fio's submission pattern for the same
// options): requests are queued one by one and committed every
// iodepth_batch_submit of them; completions are reaped when the queue is
// full, waiting for iodepth_batch_complete_min and taking at most
// iodepth_batch_complete_max; rate caps and thinktime wait for everything in
// flight before sleeping (fio's quiesce). A verify job then reads back what
// it wrote; with trim_backlog it also trims some of the blocks it wrote (each
// then reads back as zeros, or as trim_verify_zero=0 allows), and with
// verify_only it issues nothing and replays its I/O sequence to know what a
// finished run left on the target.
//
// Nothing is allocated per I/O; the clock is read once per batch of events
// (after a commit, after a synchronous I/O, after a reap unless the engine
// held the completions and the reading after the commit just before it
// still stands).
// Thread-safety: one job per runner, one thread.
#ifndef BLKGEN_JOB_RUNNER_H_
#define BLKGEN_JOB_RUNNER_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine.h"
#include "histogram.h"
#include "io_pattern.h"
#include "job_result.h"
#include "job_spec.h"
#include "status.h"
#include "target.h"

namespace blkgen {

// What a job needs from outside its spec.
struct RunContext {
  std::string cgroup_root = "/sys/fs/cgroup";
  std::string sysfs_root = "/sys";
};

class JobRunner {
 public:
  // `result` is written by Prepare() and Run(); REQUIRES: it outlives the
  // runner and starts value-initialised; so does `series` (room for the
  // job's time series). `job_index` is the job's position in the job list
  // (it seeds the job's random streams). spec.randseed is the seed to use.
  JobRunner(const JobSpec& spec, uint32_t job_index, JobResult* result,
            std::span<SeriesPoint> series, const RunContext& context);
  JobRunner(const JobRunner&) = delete;
  JobRunner& operator=(const JobRunner&) = delete;
  ~JobRunner();

  // Sets up the process (cgroup, ioprio) and the job. On failure the error
  // is also recorded in the result.
  Status Prepare();

  // Runs the job. REQUIRES: Prepare() succeeded. I/O errors stop the job;
  // they are recorded in the result (partial results stay valid) and
  // returned.
  Status Run();

 private:
  enum class Phase { kMain, kVerify };

  Status SetUpProcess();
  Status SetUpVerify();
  template <class E>
  void Loop(E& engine);
  template <class E>
  void CommitStaged(E& engine);
  template <class E>
  bool ReapOnce(E& engine, uint32_t min);
  template <class E>
  void Quiesce(E& engine);
  template <class E>
  void RunPhase(E& engine, Phase phase);
  template <class E>
  void WaitUntilDue(E& engine, uint64_t due_ns);
  bool NextReplayed(IoRequest* req);
  Status CheckReplayFits() const;
  bool NextRequest(IoRequest* req);
  bool NextTrim(IoRequest* req);
  void MaybeQueueForTrim(uint64_t block);
  void Replay();
  void RecordBlockState(const IoRequest& req, bool whole, uint32_t generation);
  bool BlockBusy(const IoRequest& req) const;
  void MarkIssued(IoRequest* req);
  void Complete(IoRequest* req, uint64_t now_ns);
  void CheckRead(const IoRequest& req);
  void CheckTrimmedRead(const IoRequest& req, uint32_t generation);
  void RecordMismatch(const VerifyMismatch& m);
  void OnBatchDone(uint64_t now_ns);
  void BeginMeasuring();
  void TakeBwSample(uint64_t now_ns);
  void EmitSeriesPoint(uint64_t now_ns);
  void SleepUntil(uint64_t when_ns);
  uint64_t RateDue(const IoRequest& req) const;
  void RecordError(int err, const std::string& text);
  void SnapshotUsage(bool at_end);

  const JobSpec spec_;
  const uint32_t job_index_;
  JobResult* const result_;
  const std::span<SeriesPoint> series_;
  const RunContext context_;
  const std::string filename_;

  Target target_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<IoPattern> pattern_;
  uint32_t depth_ = 1;
  uint32_t batch_submit_ = 1;
  uint32_t complete_min_ = 1;
  uint32_t complete_max_ = 1;
  uint64_t buffer_bytes_ = 0;
  uint8_t* buffers_ = nullptr;  // depth_ * buffer_bytes_, 4096-aligned; owned
  std::vector<IoRequest> requests_;
  std::vector<IoRequest*> free_;    // requests not in flight
  std::vector<IoRequest*> staged_;  // queued, not yet handed to the kernel
  std::vector<IoRequest*> events_;  // completions of one Reap()
  uint32_t inflight_ = 0;           // queued and not completed (staged or in the kernel)
  FILE* iolog_ = nullptr;           // owned

  Phase phase_ = Phase::kMain;
  bool record_slat_ = false;  // async engines only, as fio
  bool issuing_ = true;
  bool measuring_ = false;
  uint64_t now_ = 0;               // last clock reading
  bool clock_fresh_ = false;       // now_ read after a commit, nothing done since
  uint64_t start_ns_ = 0;          // first I/O prepared
  uint64_t measure_start_ns_ = 0;  // start_ns_ + ramp
  uint64_t deadline_ns_ = 0;       // measure start + runtime; 0 = none
  uint64_t last_event_ns_ = 0;
  // Issue accounting (fio: io_issue_bytes, rate, fsync, thinktime).
  uint64_t io_limit_bytes_ = 0;  // bytes to issue unless time_based
  uint64_t issued_bytes_ = 0;
  uint64_t rate_bps_[kNumDirs] = {};
  uint64_t rate_bytes_[kNumDirs] = {};
  bool rate_limited_ = false;
  uint32_t writes_since_sync_ = 0;
  bool last_issued_write_ = false;
  uint64_t completed_since_think_ = 0;
  // Replay (read_iolog): the next entry of the trace and the due time
  // (CLOCK_MONOTONIC) of the request NextRequest() returned last.
  size_t replay_next_ = 0;
  uint64_t replay_due_ns_ = 0;
  // Verify: per block, the generation of the last completed write of this
  // job (0 = none), kTrimmed once a trim of it completed (until the next
  // write) and kInFlight while an I/O to it is in flight.
  bool verify_ = false;
  bool replaying_ = false;  // verify_only: walking the sequence, issuing nothing
  uint64_t verify_block_bytes_ = 0;
  std::vector<uint32_t> verify_table_;
  uint32_t write_generation_ = 0;
  uint64_t verify_cursor_ = 0;  // next block to read back in the verify phase
  // Verify trims (trim_percentage, trim_backlog): blocks waiting to be
  // trimmed, a ring, oldest first; allocated once.
  std::vector<uint64_t> trim_queue_;
  uint64_t trim_queue_head_ = 0;
  uint64_t trim_queue_size_ = 0;
  uint64_t trim_state_ = 0;          // random stream picking the writes to trim
  uint32_t writes_since_trims_ = 0;  // writes since the last trim batch began
  uint32_t trim_batch_left_ = 0;     // trims still to issue in this batch
  // State of the bandwidth sampler: totals at the previous sample.
  uint64_t sample_start_ns_ = 0;
  uint64_t sample_bytes_[kNumDirs] = {};
  uint64_t sample_ios_[kNumDirs] = {};
  // Time series: the current interval.
  uint64_t series_start_ns_ = 0;
  uint64_t series_ios_[kNumDirs] = {};
  uint64_t series_bytes_[kNumDirs] = {};
  std::unique_ptr<LatencyHistogram[]> series_hist_;  // one per direction
  // getrusage at the start of the measured phase.
  static constexpr int kUsageFields = 6;
  uint64_t usage_start_[kUsageFields] = {};
};

}  // namespace blkgen

#endif  // BLKGEN_JOB_RUNNER_H_

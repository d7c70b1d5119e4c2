#include "job_runner.h"

#include <errno.h>
#include <sched.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "clock.h"
#include "io_uring_engine.h"
#include "psync_engine.h"

namespace blkgen {
namespace {

constexpr uint64_t kBufferAlign = 4096;  // bytes; covers O_DIRECT on 4Kn devices
constexpr uint32_t kPatternStream = 0;   // DeriveSeed stream of the I/O sequence
constexpr uint32_t kFillStream = 1;      // DeriveSeed stream of written data

// fio's iodepth_level bucket of an in-flight count: 1, 2-3, 4-7, ..., >=64.
inline int DepthBucket(uint32_t depth) {
  const int log2 = 31 - __builtin_clz(depth | 1);
  return log2 < kDepthBuckets - 1 ? log2 : kDepthBuckets - 1;
}

// fio's iodepth_submit/complete bucket of a batch: 0, 1-4, 5-8, 9-16, ...
inline int BatchBucket(uint32_t n) {
  if (n == 0) return 0;
  if (n <= 4) return 1;
  const int log2_ceil = 32 - __builtin_clz(n - 1);  // n in (2^(k-1), 2^k] -> k
  const int bucket = log2_ceil - 1;                 // 5-8 -> 2, 9-16 -> 3
  return bucket < kDepthBuckets - 1 ? bucket : kDepthBuckets - 1;
}

uint64_t TimevalNs(const timeval& tv) {
  return static_cast<uint64_t>(tv.tv_sec) * 1000000000ULL +
         static_cast<uint64_t>(tv.tv_usec) * 1000ULL;
}

Dir SingleDirection(RwMode mode) {
  const uint8_t mask = InfoFor(mode).dir_mask;
  if (mask & DirBit(Dir::kWrite)) return Dir::kWrite;
  if (mask & DirBit(Dir::kTrim)) return Dir::kTrim;
  return Dir::kRead;
}

}  // namespace

JobRunner::JobRunner(const JobSpec& spec, uint32_t job_index, JobResult* result)
    : spec_(spec), job_index_(job_index), result_(result) {}

JobRunner::~JobRunner() {
  engine_.reset();  // the ring may still reference the buffers
  std::free(buffers_);
}

void JobRunner::RecordError(int err, const std::string& text) {
  if (result_->error != 0) return;  // keep the first
  result_->error = err;
  std::snprintf(result_->error_text, sizeof(result_->error_text), "%s", text.c_str());
}

Status JobRunner::Prepare() {
  Status s = [&]() -> Status {
    const uint64_t fill_seed = DeriveSeed(spec_.randseed, job_index_, kFillStream);
    Status st = target_.Open(spec_, fill_seed);
    if (!st.ok()) return st;

    const Dir dir = SingleDirection(spec_.rw);
    const uint64_t bs = spec_.bs[static_cast<int>(dir)];
    if (target_.region_bytes() < bs) {
      return Status::Runtime("region of " + std::to_string(target_.region_bytes()) +
                             " bytes is smaller than bs=" + std::to_string(bs));
    }
    pattern_ = std::make_unique<IoPattern>(
        spec_.rw, target_.region_offset(), target_.region_bytes(), bs,
        DeriveSeed(spec_.randseed, job_index_, kPatternStream), spec_.time_based);

    depth_ = spec_.iodepth;
    engine_ = MakeEngine(spec_.ioengine);
    if ((engine_->caps() & kCapSync) != 0) depth_ = 1;
    record_slat_ = (engine_->caps() & kCapSync) == 0;  // fio: no slat for sync I/O
    st = engine_->Init(target_.fd(), depth_);
    if (!st.ok()) return st;

    const uint64_t buffer_bytes = (bs + kBufferAlign - 1) / kBufferAlign * kBufferAlign;
    buffers_ = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, buffer_bytes * depth_));
    if (buffers_ == nullptr) return Status::Runtime("cannot allocate I/O buffers", ENOMEM);
    if (dir == Dir::kWrite) FillPattern(buffers_, buffer_bytes * depth_, fill_seed);

    requests_.resize(depth_);
    free_.reserve(depth_);
    staged_.reserve(depth_);
    events_.resize(depth_);
    for (uint32_t i = 0; i < depth_; ++i) {
      requests_[i].buffer = buffers_ + i * buffer_bytes;
      free_.push_back(&requests_[depth_ - 1 - i]);  // pop_back() hands out request 0 first
    }
    result_->iodepth = depth_;
    result_->region_offset = target_.region_offset();
    result_->region_bytes = target_.region_bytes();
    result_->engine_flags = engine_->setup_flags();
    return Status::Ok();
  }();
  if (!s.ok()) RecordError(s.error_number(), s.message());
  return s;
}

void JobRunner::SnapshotUsage(bool at_end) {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  const uint64_t now[5] = {TimevalNs(ru.ru_utime), TimevalNs(ru.ru_stime),
                           static_cast<uint64_t>(ru.ru_nvcsw + ru.ru_nivcsw),
                           static_cast<uint64_t>(ru.ru_majflt),
                           static_cast<uint64_t>(ru.ru_minflt)};
  if (!at_end) {
    std::memcpy(usage_start_, now, sizeof(now));
    return;
  }
  result_->usr_ns = now[0] - usage_start_[0];
  result_->sys_ns = now[1] - usage_start_[1];
  result_->ctx = now[2] - usage_start_[2];
  result_->majf = now[3] - usage_start_[3];
  result_->minf = now[4] - usage_start_[4];
}

void JobRunner::BeginMeasuring() {
  measuring_ = true;
  sample_start_ns_ = measure_start_ns_;
  SnapshotUsage(false);
}

void JobRunner::TakeBwSample(uint64_t now_ns) {
  const uint64_t spent = now_ns - sample_start_ns_;
  const uint8_t dirs = InfoFor(spec_.rw).dir_mask;
  for (int d = 0; d < kNumDirs; ++d) {
    if ((dirs & DirBit(static_cast<Dir>(d))) == 0) continue;
    DirResult& r = result_->dir[d];
    const unsigned __int128 bytes = r.io_bytes - sample_bytes_[d];
    const unsigned __int128 ios = r.total_ios - sample_ios_[d];
    r.bw_kib_s.Add(static_cast<uint64_t>(bytes * 1000000000ULL / spent / 1024));
    r.iops.Add(static_cast<uint64_t>(ios * 1000000000ULL / spent));
    sample_bytes_[d] = r.io_bytes;
    sample_ios_[d] = r.total_ios;
  }
  sample_start_ns_ = now_ns;
}

inline void JobRunner::OnBatchDone(uint64_t now_ns) {
  last_event_ns_ = now_ns;
  if (!measuring_ && now_ns >= measure_start_ns_) BeginMeasuring();
  if (measuring_ && now_ns - sample_start_ns_ >= kBwSampleIntervalNs) TakeBwSample(now_ns);
  if (deadline_ns_ != 0 && now_ns >= deadline_ns_) issuing_ = false;
}

inline void JobRunner::Complete(IoRequest* req, uint64_t now_ns) {
  if (req->result < 0) {
    const int err = static_cast<int>(-req->result);
    RecordError(err, "io_u error on file " + spec_.EffectiveFilename() + ": " + std::strerror(err) +
                         ": " + std::string(kDirNames[static_cast<int>(req->dir)]) + " offset=" +
                         std::to_string(req->offset) + ", buflen=" + std::to_string(req->length));
    issuing_ = false;
    return;
  }
  if (req->start_ns < measure_start_ns_) return;  // ramp_time: not measured
  DirResult& d = result_->dir[static_cast<int>(req->dir)];
  const uint64_t bytes = static_cast<uint64_t>(req->result);
  if (bytes < req->length) ++d.short_ios;
  d.io_bytes += bytes;
  ++d.total_ios;
  const uint64_t clat = now_ns - req->issue_ns;
  const uint64_t lat = now_ns - req->start_ns;
  if (record_slat_) d.slat_ns.Add(req->issue_ns - req->start_ns);
  d.clat_ns.Add(clat);
  d.lat_ns.Add(lat);
  d.clat_hist.Add(clat);
  d.lat_hist.Add(lat);
}

template <class E>
void JobRunner::Loop(E& engine) {
  uint32_t inflight = 0;  // queued and not completed (staged or in the kernel)
  uint64_t now = start_ns_;
  IoRequest* held = nullptr;  // prepared, refused with kBusy; next to queue
  IoUnit unit;
  while (true) {
    while (issuing_ && inflight < depth_) {
      IoRequest* req = held;
      if (req == nullptr) {
        if (!pattern_->Next(&unit)) {
          issuing_ = false;
          break;
        }
        req = free_.back();
        free_.pop_back();
        req->dir = unit.dir;
        req->offset = unit.offset;
        req->length = unit.length;
      }
      req->start_ns = now;
      const SubmitResult r = engine.Queue(req);
      if (r == SubmitResult::kBusy) {
        held = req;
        break;
      }
      held = nullptr;
      if (r == SubmitResult::kCompleted) {
        now = MonotonicNs();
        req->issue_ns = req->start_ns;
        if (measuring_) {
          ++result_->depth_map[DepthBucket(inflight + 1)];
          ++result_->submit_map[BatchBucket(1)];
          ++result_->complete_map[BatchBucket(1)];
        }
        Complete(req, now);
        free_.push_back(req);
        OnBatchDone(now);
        continue;
      }
      ++inflight;
      staged_.push_back(req);
    }
    if (!issuing_ && held != nullptr) {
      free_.push_back(held);
      held = nullptr;
    }

    bool kernel_busy = false;
    if (!staged_.empty()) {
      const int n = engine.Commit();
      if (n == -EAGAIN || n == -EBUSY) {
        kernel_busy = true;
      } else if (n < 0) {
        RecordError(-n, ErrnoMessage("submit", -n));
        issuing_ = false;
        inflight -= static_cast<uint32_t>(staged_.size());  // never handed over
        for (IoRequest* r : staged_) free_.push_back(r);
        staged_.clear();
      } else if (n > 0) {
        const uint64_t issued = MonotonicNs();
        for (int i = 0; i < n; ++i) staged_[i]->issue_ns = issued;
        staged_.erase(staged_.begin(), staged_.begin() + n);
        if (measuring_) {
          ++result_->submit_map[BatchBucket(static_cast<uint32_t>(n))];
          // As fio: each submitted I/O counts at the depth in use when committed.
          result_->depth_map[DepthBucket(inflight)] += static_cast<uint64_t>(n);
        }
      }
    }

    const uint32_t in_kernel = inflight - static_cast<uint32_t>(staged_.size());
    if (in_kernel == 0) {
      if (inflight == 0 && !issuing_) break;
      if (kernel_busy) sched_yield();  // nothing to reap; let the kernel catch up
      continue;
    }
    const int k = engine.Reap(1, in_kernel, events_.data());
    if (k < 0) {
      if (k == -EINTR || k == -EAGAIN || k == -ETIME) continue;
      RecordError(-k, ErrnoMessage("reap", -k));
      break;  // I/O still in flight is waited for when the engine closes
    }
    now = MonotonicNs();
    for (int i = 0; i < k; ++i) {
      Complete(events_[i], now);
      free_.push_back(events_[i]);
    }
    inflight -= static_cast<uint32_t>(k);
    if (measuring_) ++result_->complete_map[BatchBucket(static_cast<uint32_t>(k))];
    OnBatchDone(now);
  }
}

Status JobRunner::Run() {
  start_ns_ = MonotonicNs();
  last_event_ns_ = start_ns_;
  measure_start_ns_ = start_ns_ + spec_.ramp_ns;
  deadline_ns_ = spec_.runtime_ns != 0 ? measure_start_ns_ + spec_.runtime_ns : 0;
  if (spec_.ramp_ns == 0) BeginMeasuring();

  switch (spec_.ioengine) {
    case EngineKind::kPsync:
      Loop(static_cast<PsyncEngine&>(*engine_));
      break;
    case EngineKind::kIoUring:
      Loop(static_cast<IoUringEngine&>(*engine_));
      break;
  }

  result_->elapsed_ns = last_event_ns_ - start_ns_;
  if (measuring_) {
    result_->measured = true;
    result_->runtime_ns = last_event_ns_ - measure_start_ns_;
    SnapshotUsage(true);
  }
  if (result_->error != 0) return Status::Runtime(result_->error_text, result_->error);
  return Status::Ok();
}

}  // namespace blkgen

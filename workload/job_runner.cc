#include "job_runner.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>

#include "block_device.h"
#include "cgroup.h"
#include "clock.h"
#include "io_uring_engine.h"
#include "libaio_engine.h"
#include "psync_engine.h"
#include "replay.h"
#include "verify.h"

namespace blkgen {
namespace {

constexpr uint64_t kBufferAlign = 4096;             // bytes; covers O_DIRECT on 4Kn devices
constexpr uint32_t kPatternStream = 0;              // DeriveSeed stream of the I/O sequence
constexpr uint32_t kFillStream = 1;                 // DeriveSeed stream of written data
constexpr uint32_t kDelayStream = 2;                // DeriveSeed stream of startdelay ranges
constexpr uint32_t kTrimStream = 3;                 // DeriveSeed stream of verify trim picks
constexpr uint32_t kInFlight = 1u << 31;            // verify table: I/O in flight
constexpr uint32_t kTrimmed = 1u << 30;             // verify table: trimmed since written
constexpr uint32_t kGenerationMask = kTrimmed - 1;  // verify table: generation
// Most blocks waiting to be trimmed (8 bytes each); a write picked for
// trimming while the queue is full is not queued.
constexpr uint64_t kMaxTrimQueue = 1ULL << 20;
constexpr int kIoprioClassShift = 13;  // linux/ioprio.h
constexpr int kIoprioWhoProcess = 1;
constexpr int kIoprioClassBe = 2;

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

// Sleeps until CLOCK_MONOTONIC reads `when_ns`.
void SleepUntilNs(uint64_t when_ns) {
  timespec ts;
  ts.tv_sec = static_cast<time_t>(when_ns / 1000000000ULL);
  ts.tv_nsec = static_cast<long>(when_ns % 1000000000ULL);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

const char* IologAction(IoOp op) {
  switch (op) {
    case IoOp::kRead:
      return "read";
    case IoOp::kWrite:
      return "write";
    case IoOp::kTrim:
      return "trim";
    case IoOp::kFsync:
      return "sync";
    case IoOp::kFdatasync:
      return "datasync";
  }
  return "?";
}

}  // namespace

JobRunner::JobRunner(const JobSpec& spec, uint32_t job_index, JobResult* result,
                     std::span<SeriesPoint> series, const RunContext& context)
    : spec_(spec),
      job_index_(job_index),
      result_(result),
      series_(series),
      context_(context),
      filename_(spec.EffectiveFilename()) {}

JobRunner::~JobRunner() {
  engine_.reset();  // the ring may still reference the buffers
  std::free(buffers_);
  if (iolog_ != nullptr) {
    std::fprintf(iolog_, "%s close\n", filename_.c_str());
    std::fclose(iolog_);
  }
}

void JobRunner::RecordError(int err, const std::string& text) {
  if (result_->error != 0) return;  // keep the first
  result_->error = err;
  std::snprintf(result_->error_text, sizeof(result_->error_text), "%s", text.c_str());
}

Status JobRunner::SetUpProcess() {
  if (!spec_.cgroup.empty()) {
    CgroupSettings cg;
    cg.root = context_.cgroup_root;
    cg.name = spec_.cgroup;
    cg.io_weight = spec_.cgroup_io_weight;
    cg.bfq_weight = spec_.cgroup_bfq_weight;
    cg.io_max = spec_.cgroup_io_max;
    if (!cg.io_max.empty()) {
      DiskId disk;
      Status s = WholeDiskOf(filename_, context_.sysfs_root, &disk);
      if (!s.ok()) return Status::Runtime("cgroup_io_max: " + s.message(), s.error_number());
      cg.disk_maj_min = disk.maj_min;
    }
    int created = 0;
    Status s = SetUpCgroup(cg, &created);
    result_->cgroup_created_levels = static_cast<uint8_t>(created);
    if (!s.ok()) return s;
    s = JoinCgroup(cg.root, cg.name, getpid());
    if (!s.ok()) return s;
  }
  if (spec_.prio || spec_.prioclass) {
    const int cls = spec_.prioclass ? static_cast<int>(*spec_.prioclass) : kIoprioClassBe;
    const int level = spec_.prio ? static_cast<int>(*spec_.prio) : 0;
    if (syscall(SYS_ioprio_set, kIoprioWhoProcess, 0, (cls << kIoprioClassShift) | level) != 0) {
      return Status::Errno(
          "prioclass=" + std::to_string(cls) + " prio=" + std::to_string(level) + ": ioprio_set",
          errno);
    }
  }
  return Status::Ok();
}

Status JobRunner::SetUpVerify() {
  verify_ = spec_.verify != VerifyKind::kNone;
  if (!verify_) return Status::Ok();
  for (int d = 0; d < kNumDirs; ++d) {
    if (spec_.Does(static_cast<Dir>(d)) && d != static_cast<int>(Dir::kTrim)) {
      verify_block_bytes_ = spec_.bs[d];
    }
  }
  if (verify_block_bytes_ == 0) {  // trim-only job: nothing to check
    verify_ = false;
    return Status::Ok();
  }
  const uint64_t blocks = target_.region_bytes() / verify_block_bytes_;
  try {
    verify_table_.assign(blocks, 0);
    if (spec_.TrimsWrittenBlocks()) trim_queue_.assign(std::min(blocks, kMaxTrimQueue), 0);
  } catch (const std::bad_alloc&) {
    return Status::Runtime(
        "verify: cannot allocate 4 bytes per block for " + std::to_string(blocks) + " blocks",
        ENOMEM);
  }
  trim_state_ = DeriveSeed(spec_.randseed, job_index_, kTrimStream);
  return Status::Ok();
}

Status JobRunner::Prepare() {
  Status s = [&]() -> Status {
    result_->randseed = spec_.randseed;
    Status st = SetUpProcess();
    if (!st.ok()) return st;
    const uint64_t fill_seed = DeriveSeed(spec_.randseed, job_index_, kFillStream);
    st = target_.Open(spec_, fill_seed);
    if (!st.ok()) return st;

    uint64_t max_bs = 0;
    io_limit_bytes_ = spec_.io_size != 0 ? spec_.io_size : target_.region_bytes();
    for (int d = 0; d < kNumDirs; ++d) {
      const Dir dir = static_cast<Dir>(d);
      if (!spec_.Does(dir)) continue;
      max_bs = std::max(max_bs, spec_.MaxBs(dir));
      io_limit_bytes_ -= io_limit_bytes_ % spec_.MinBs(dir);  // whole blocks, as fio
      if (spec_.rate[d] != 0) rate_bps_[d] = spec_.rate[d];
      if (spec_.rate_iops[d] != 0) rate_bps_[d] = spec_.rate_iops[d] * spec_.MinBs(dir);
      rate_limited_ |= rate_bps_[d] != 0;
    }
    if (spec_.replay != nullptr) {
      st = CheckReplayFits();
      if (!st.ok()) return st;
      // Wake-ups at the due time, not up to 50 us after it (the default slack).
      prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    }
    if (target_.region_bytes() < max_bs) {
      return Status::Runtime("region of " + std::to_string(target_.region_bytes()) +
                             " bytes is smaller than the block size " + std::to_string(max_bs));
    }
    pattern_ = std::make_unique<IoPattern>(
        MakePatternConfig(spec_, target_.region_offset(), target_.region_bytes(),
                          DeriveSeed(spec_.randseed, job_index_, kPatternStream)));
    st = SetUpVerify();
    if (!st.ok()) return st;

    depth_ = spec_.iodepth;
    engine_ = MakeEngine(spec_.ioengine);
    if ((engine_->caps() & kCapSync) != 0) depth_ = 1;
    record_slat_ = (engine_->caps() & kCapSync) == 0;  // fio: no slat for sync I/O
    batch_submit_ = std::min(spec_.iodepth_batch_submit, depth_);
    complete_min_ = spec_.iodepth_batch_complete_min;
    complete_max_ = std::max(spec_.iodepth_batch_complete_max, complete_min_);

    buffer_bytes_ = (max_bs + kBufferAlign - 1) / kBufferAlign * kBufferAlign;
    buffers_ = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, buffer_bytes_ * depth_));
    if (buffers_ == nullptr) return Status::Runtime("cannot allocate I/O buffers", ENOMEM);
    FillPattern(buffers_, buffer_bytes_ * depth_, fill_seed);

    requests_.resize(depth_);
    free_.reserve(depth_);
    staged_.reserve(depth_);
    events_.resize(depth_);
    for (uint32_t i = 0; i < depth_; ++i) {
      requests_[i].buffer = buffers_ + i * buffer_bytes_;
      requests_[i].index = i;
      free_.push_back(&requests_[depth_ - 1 - i]);  // pop_back() hands out request 0 first
    }
    EngineSetup setup;
    setup.fd = target_.fd();
    setup.block_device = target_.is_block_device();
    setup.depth = depth_;
    setup.requests = requests_;
    setup.buffer_bytes = buffer_bytes_;
    setup.sqthread_poll = spec_.sqthread_poll;
    setup.fixedbufs = spec_.fixedbufs;
    st = engine_->Init(setup);
    if (!st.ok()) return st;

    if (!spec_.write_iolog.empty()) {
      iolog_ = std::fopen(spec_.write_iolog.c_str(), "we");
      if (iolog_ == nullptr) {
        return Status::Errno("write_iolog '" + spec_.write_iolog + "'", errno);
      }
      std::fprintf(iolog_, "fio version 2 iolog\n%s add\n%s open\n", filename_.c_str(),
                   filename_.c_str());
    }
    series_hist_ = std::make_unique<LatencyHistogram[]>(kNumDirs);
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
  const uint64_t now[kUsageFields] = {TimevalNs(ru.ru_utime), TimevalNs(ru.ru_stime),
                                      static_cast<uint64_t>(ru.ru_nvcsw + ru.ru_nivcsw),
                                      static_cast<uint64_t>(ru.ru_majflt),
                                      static_cast<uint64_t>(ru.ru_minflt),
                                      static_cast<uint64_t>(ru.ru_nivcsw)};
  if (!at_end) {
    std::memcpy(usage_start_, now, sizeof(now));
    return;
  }
  result_->usr_ns = now[0] - usage_start_[0];
  result_->sys_ns = now[1] - usage_start_[1];
  result_->ctx = now[2] - usage_start_[2];
  result_->majf = now[3] - usage_start_[3];
  result_->minf = now[4] - usage_start_[4];
  result_->ctx_involuntary = now[5] - usage_start_[5];
}

void JobRunner::BeginMeasuring() {
  measuring_ = true;
  sample_start_ns_ = measure_start_ns_;
  series_start_ns_ = measure_start_ns_;
  SnapshotUsage(false);
}

void JobRunner::TakeBwSample(uint64_t now_ns) {
  const uint64_t spent = now_ns - sample_start_ns_;
  for (int d = 0; d < kNumDirs; ++d) {
    if (!spec_.Issues(static_cast<Dir>(d))) continue;
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

void JobRunner::EmitSeriesPoint(uint64_t now_ns) {
  if (result_->series_points >= series_.size()) {
    result_->series_truncated = true;
  } else {
    static constexpr double kPercentiles[] = {50, 99};
    SeriesPoint& p = series_[result_->series_points++];
    p.end_ns = now_ns - measure_start_ns_;
    for (int d = 0; d < kNumDirs; ++d) {
      p.ios[d] = series_ios_[d];
      p.bytes[d] = series_bytes_[d];
      if (series_ios_[d] == 0) continue;
      const std::vector<uint64_t> v = series_hist_[d].Percentiles(kPercentiles, 0, UINT64_MAX);
      p.clat_p50_ns[d] = v[0];
      p.clat_p99_ns[d] = v[1];
    }
  }
  for (int d = 0; d < kNumDirs; ++d) {
    if (series_ios_[d] != 0) series_hist_[d].Clear();
    series_ios_[d] = series_bytes_[d] = 0;
  }
  series_start_ns_ = now_ns;
}

inline void JobRunner::OnBatchDone(uint64_t now_ns) {
  last_event_ns_ = now_ns;
  if (phase_ != Phase::kMain) return;
  if (!measuring_ && now_ns >= measure_start_ns_) BeginMeasuring();
  if (measuring_) {
    if (now_ns - sample_start_ns_ >= kBwSampleIntervalNs) TakeBwSample(now_ns);
    if (now_ns - series_start_ns_ >= spec_.log_interval_ns) EmitSeriesPoint(now_ns);
  }
  if (deadline_ns_ != 0 && now_ns >= deadline_ns_) issuing_ = false;
}

void JobRunner::SleepUntil(uint64_t when_ns) {
  if (deadline_ns_ != 0 && when_ns > deadline_ns_) when_ns = deadline_ns_;
  SleepUntilNs(when_ns);
  now_ = MonotonicNs();
  OnBatchDone(now_);
}

// fio's usec_for_io(): when the next I/O of req's direction may be issued.
uint64_t JobRunner::RateDue(const IoRequest& req) const {
  const int d = static_cast<int>(req.op);
  const uint64_t bps = rate_bps_[d];
  if (bps == 0) return 0;
  const unsigned __int128 ns = static_cast<unsigned __int128>(rate_bytes_[d]) * 1000000000ULL / bps;
  return start_ns_ + static_cast<uint64_t>(ns);
}

// The next I/O of the trace, due at its recorded time since the start.
bool JobRunner::NextReplayed(IoRequest* req) {
  const std::vector<ReplayIo>& ios = spec_.replay->ios;
  if (replay_next_ == ios.size()) return false;
  const ReplayIo& io = ios[replay_next_++];
  req->op = io.op;
  req->offset = io.offset;
  req->length = io.length;
  replay_due_ns_ = start_ns_ + io.due_ns;
  return true;
}

Status JobRunner::CheckReplayFits() const {
  const ReplayTrace& t = *spec_.replay;
  const uint64_t end = target_.region_offset() + target_.region_bytes();
  if (t.end_offset > end) {
    return Status::Runtime("read_iolog=" + spec_.read_iolog + ": the trace reaches byte " +
                               std::to_string(t.end_offset) + " but '" + filename_ + "' ends at " +
                               std::to_string(end) +
                               "; replay_scale=N divides the trace's offsets by N",
                           EINVAL);
  }
  return Status::Ok();
}

bool JobRunner::NextRequest(IoRequest* req) {
  req->verify_phase = false;
  if (phase_ == Phase::kVerify) {
    while (verify_cursor_ < verify_table_.size() &&
           (verify_table_[verify_cursor_] & kGenerationMask) == 0) {
      ++verify_cursor_;
    }
    if (verify_cursor_ == verify_table_.size()) return false;
    req->op = IoOp::kRead;
    req->block = verify_cursor_;
    req->offset = target_.region_offset() + verify_cursor_ * verify_block_bytes_;
    req->length = static_cast<uint32_t>(verify_block_bytes_);
    req->verify_phase = true;
    ++verify_cursor_;
    return true;
  }
  if (spec_.replay != nullptr) return NextReplayed(req);
  // As fio's do_io(): stop once `size` bytes were issued (time_based: never).
  if (!spec_.time_based && issued_bytes_ >= io_limit_bytes_) return false;
  if (last_issued_write_ && writes_since_sync_ > 0) {
    if (spec_.fsync_blocks != 0 && writes_since_sync_ % spec_.fsync_blocks == 0) {
      req->op = IoOp::kFsync;
    } else if (spec_.fdatasync_blocks != 0 && writes_since_sync_ % spec_.fdatasync_blocks == 0) {
      req->op = IoOp::kFdatasync;
    } else {
      req->op = IoOp::kRead;  // marker: no sync due
    }
    if (req->op != IoOp::kRead) {
      req->offset = 0;
      req->length = 0;
      return true;
    }
  }
  if (trim_batch_left_ > 0 && NextTrim(req)) return true;
  IoUnit unit;
  pattern_->Next(&unit);
  req->op = static_cast<IoOp>(unit.dir);
  req->offset = unit.offset;
  req->length = unit.length;
  if (verify_) {
    req->block = (unit.offset - target_.region_offset()) / verify_block_bytes_;
    if (req->op == IoOp::kWrite) {
      write_generation_ = write_generation_ % kGenerationMask + 1;  // 1 .. 2^30-1
      if (!replaying_) {
        StampBlock(req->buffer, req->length, req->offset, job_index_, write_generation_);
      }
      if (!trim_queue_.empty()) MaybeQueueForTrim(req->block);
    }
  }
  return true;
}

// A write of a verify job with trims: picks its block for the trim queue
// with probability trim_percentage % (its own random stream, so the I/O
// sequence stays a function of the seed), and every trim_backlog writes
// starts a batch of trims.
void JobRunner::MaybeQueueForTrim(uint64_t block) {
  const uint64_t draw = ((SplitMix64(&trim_state_) >> 32) * 100) >> 32;  // 0..99
  if (draw < spec_.trim_percentage && trim_queue_size_ < trim_queue_.size()) {
    trim_queue_[(trim_queue_head_ + trim_queue_size_) % trim_queue_.size()] = block;
    ++trim_queue_size_;
  }
  if (++writes_since_trims_ >= spec_.trim_backlog) {
    writes_since_trims_ = 0;
    trim_batch_left_ =
        spec_.trim_backlog_batch != 0 ? spec_.trim_backlog_batch : spec_.trim_backlog;
  }
}

// The next trim of the current batch: the oldest queued block. False (and
// the batch ends) when the queue is empty.
bool JobRunner::NextTrim(IoRequest* req) {
  if (trim_queue_size_ == 0) {
    trim_batch_left_ = 0;
    return false;
  }
  const uint64_t block = trim_queue_[trim_queue_head_];
  trim_queue_head_ = (trim_queue_head_ + 1) % trim_queue_.size();
  --trim_queue_size_;
  --trim_batch_left_;
  req->op = IoOp::kTrim;
  req->block = block;
  req->offset = target_.region_offset() + block * verify_block_bytes_;
  req->length = static_cast<uint32_t>(verify_block_bytes_);
  return true;
}

// True if an I/O to the same verify block is in flight (fio's
// serialize_overlap, which verify needs to know what a block holds).
inline bool JobRunner::BlockBusy(const IoRequest& req) const {
  return verify_ && IsData(req.op) && (verify_table_[req.block] & kInFlight) != 0;
}

// Bookkeeping of an I/O the engine accepted.
inline void JobRunner::MarkIssued(IoRequest* req) {
  if (iolog_ != nullptr && !replaying_) {
    std::fprintf(iolog_, "%s %s %llu %u\n", filename_.c_str(), IologAction(req->op),
                 static_cast<unsigned long long>(req->offset), req->length);
  }
  if (req->verify_phase) {
    verify_table_[req->block] |= kInFlight;
    return;
  }
  const bool write = req->op == IoOp::kWrite;
  if (IsData(req->op)) {
    issued_bytes_ += req->length;
    rate_bytes_[static_cast<int>(req->op)] += req->length;
    if (write) ++writes_since_sync_;
    if (verify_) verify_table_[req->block] |= kInFlight;
  } else {
    writes_since_sync_ = 0;
  }
  last_issued_write_ = write;
}

void JobRunner::RecordMismatch(const VerifyMismatch& m) {
  VerifyResult& v = result_->verify;
  ++v.mismatches;
  if (v.recorded < kMaxVerifyMismatches) v.first[v.recorded++] = m;
}

void JobRunner::CheckRead(const IoRequest& req) {
  VerifyResult& v = result_->verify;
  const uint32_t state = verify_table_[req.block];
  const uint32_t generation = state & kGenerationMask;
  if ((state & kTrimmed) != 0) {
    CheckTrimmedRead(req, generation);
    return;
  }
  const bool job_writes = spec_.Does(Dir::kWrite);
  if (generation == 0 && job_writes) {
    ++v.unchecked;  // never written by this job: content unknown
    return;
  }
  BlockIdentity expected;
  expected.offset = req.offset;
  expected.job = job_index_;
  expected.generation = generation;
  BlockIdentity want, found;
  ++v.checked;
  if (CheckBlock(req.buffer, req.length, expected, generation != 0, &want, &found)) return;
  VerifyMismatch m;
  m.offset = req.offset;
  m.writer_checked = generation != 0;
  m.expected = want;
  m.found = found;
  RecordMismatch(m);
}

// A read of a block trimmed since this job last wrote it (generation; 0 if
// that write was short). trim_verify_zero=1: it must read as zeros (fio);
// 0: as zeros, ones or the block as written (what NVMe allows after an
// advisory deallocate), where fio would not check it.
void JobRunner::CheckTrimmedRead(const IoRequest& req, uint32_t generation) {
  VerifyResult& v = result_->verify;
  if (generation == 0 && !spec_.trim_verify_zero) {
    ++v.unchecked;  // content before the trim unknown: anything goes
    return;
  }
  BlockIdentity written;
  written.magic = kVerifyMagic;
  written.offset = req.offset;
  written.length = req.length;
  written.job = job_index_;
  written.generation = generation;
  ++v.checked;
  ++v.trimmed_checked;
  bool ok = false;
  switch (ClassifyTrimmed(req.buffer, req.length, written)) {
    case TrimmedContent::kZeros:
      ++v.trimmed_zeros;
      ok = true;
      break;
    case TrimmedContent::kOnes:
      ++v.trimmed_ones;
      ok = !spec_.trim_verify_zero;
      break;
    case TrimmedContent::kUnchanged:
      ++v.trimmed_unchanged;
      ok = !spec_.trim_verify_zero;
      break;
    case TrimmedContent::kOther:
      break;
  }
  if (ok) return;
  VerifyMismatch m;
  m.offset = req.offset;
  m.writer_checked = generation != 0;
  m.trimmed = true;
  m.expected = written;
  m.expected.crc32c = Crc32c(req.buffer + 8, req.length - 8);  // as CheckBlock reports it
  m.found = ReadHeader(req.buffer);
  RecordMismatch(m);
}

// The verify table after a data I/O completed without error: a whole write
// leaves its generation, a short one an unknown block, a whole trim marks
// the block trimmed (keeping the generation it held); reads change nothing.
inline void JobRunner::RecordBlockState(const IoRequest& req, bool whole, uint32_t generation) {
  uint32_t& state = verify_table_[req.block];
  if (req.op == IoOp::kWrite) {
    state = whole ? generation & kGenerationMask : 0;
  } else if (req.op == IoOp::kTrim) {
    state = whole ? (state & kGenerationMask) | kTrimmed : 0;
  }
}

inline void JobRunner::Complete(IoRequest* req, uint64_t now_ns) {
  const bool data = IsData(req->op);
  if (verify_ && data) verify_table_[req->block] &= ~kInFlight;
  if (req->result < 0) {
    const int err = static_cast<int>(-req->result);
    if (data && (spec_.continue_on_error & DirBit(static_cast<Dir>(req->op)))) {
      if (result_->total_err++ == 0) result_->first_error = err;
      return;  // counted; neither an I/O nor bytes of the job
    }
    RecordError(err, "io_u error on file " + filename_ + ": " + std::strerror(err) + ": " +
                         IologAction(req->op) + " offset=" + std::to_string(req->offset) +
                         ", buflen=" + std::to_string(req->length));
    issuing_ = false;
    return;
  }
  if (verify_ && data) {
    const bool whole = static_cast<uint32_t>(req->result) == req->length;
    if (req->op == IoOp::kRead) {
      if (whole) CheckRead(*req);
    } else {
      // A write's generation is the one stamped into it when it was prepared.
      uint64_t generation = 0;
      if (req->op == IoOp::kWrite) std::memcpy(&generation, req->buffer + 24, sizeof(generation));
      RecordBlockState(*req, whole, static_cast<uint32_t>(generation));
    }
  }
  if (req->verify_phase) {
    ++result_->verify.verify_reads;
    return;
  }
  ++completed_since_think_;
  if (req->start_ns < measure_start_ns_) return;  // ramp_time: not measured
  const uint64_t lat = now_ns - req->start_ns;
  if (!data) {
    SyncResult& s = result_->sync;
    ++s.total_ios;
    s.lat_ns.Add(lat);
    s.lat_hist.Add(lat);
    return;
  }
  const int d = static_cast<int>(req->op);
  DirResult& r = result_->dir[d];
  const uint64_t bytes = static_cast<uint64_t>(req->result);
  if (bytes < req->length) ++r.short_ios;
  r.io_bytes += bytes;
  ++r.total_ios;
  const uint64_t clat = now_ns - req->issue_ns;
  if (record_slat_) r.slat_ns.Add(req->issue_ns - req->start_ns);
  r.clat_ns.Add(clat);
  r.lat_ns.Add(lat);
  r.clat_hist.Add(clat);
  r.lat_hist.Add(lat);
  ++series_ios_[d];
  series_bytes_[d] += bytes;
  series_hist_[d].Add(clat);
}

template <class E>
void JobRunner::CommitStaged(E& engine) {
  if (staged_.empty()) return;
  int n = engine.Commit();
  if (n == -EAGAIN || n == -EBUSY) return;  // reap first
  if (n < 0) {
    RecordError(-n, ErrnoMessage("submit", -n));
    issuing_ = false;
    inflight_ -= static_cast<uint32_t>(staged_.size());  // never handed over
    for (IoRequest* r : staged_) {
      if (verify_ && IsData(r->op)) verify_table_[r->block] &= ~kInFlight;
      free_.push_back(r);
    }
    staged_.clear();
    return;
  }
  if (n == 0) return;
  // With SQPOLL, liburing counts everything the kernel thread has not picked
  // up yet, earlier submits included.
  n = std::min<int>(n, static_cast<int>(staged_.size()));
  now_ = MonotonicNs();
  for (int i = 0; i < n; ++i) staged_[i]->issue_ns = now_;
  if (measuring_ && phase_ == Phase::kMain) {
    ++result_->submit_map[BatchBucket(static_cast<uint32_t>(n))];
    // As fio: each submitted I/O counts at the depth in use when committed.
    result_->depth_map[DepthBucket(inflight_)] += static_cast<uint64_t>(n);
  }
  staged_.erase(staged_.begin(), staged_.begin() + n);
  OnBatchDone(now_);
  clock_fresh_ = true;
}

// Commits what is staged and reaps once: waits for `min` completions (capped
// at what the kernel holds) and takes up to complete_max_. Returns false if
// nothing could be waited for.
template <class E>
bool JobRunner::ReapOnce(E& engine, uint32_t min) {
  CommitStaged(engine);
  const uint32_t in_kernel = inflight_ - static_cast<uint32_t>(staged_.size());
  if (in_kernel == 0) return false;
  min = std::min(min, in_kernel);
  const uint32_t max = std::max(min, std::min(complete_max_, in_kernel));
  const int k = engine.Reap(min, max, events_.data());
  if (k < 0) {
    if (k == -EINTR || k == -EAGAIN || k == -ETIME) return true;
    RecordError(-k, ErrnoMessage("reap", -k));
    issuing_ = false;
    return false;
  }
  if (k == 0) return true;
  // Completions the engine held since an earlier call: dated by the reading
  // just taken after the commit when nothing happened in between (one clock
  // read per I/O instead of two in a full queue's loop; off by the few
  // instructions since that reading).
  if (!clock_fresh_ || !engine.reaped_held()) now_ = MonotonicNs();
  clock_fresh_ = false;
  for (int i = 0; i < k; ++i) {
    Complete(events_[i], now_);
    free_.push_back(events_[i]);
  }
  inflight_ -= static_cast<uint32_t>(k);
  if (measuring_ && phase_ == Phase::kMain) {
    ++result_->complete_map[BatchBucket(static_cast<uint32_t>(k))];
  }
  OnBatchDone(now_);
  return true;
}

// fio's io_u_quiesce(): everything in flight completes.
template <class E>
void JobRunner::Quiesce(E& engine) {
  while (inflight_ > 0) {
    if (!ReapOnce(engine, inflight_)) {
      if (result_->error != 0) return;
      sched_yield();  // staged but the kernel refused it for now
    }
  }
}

template <class E>
void JobRunner::Loop(E& engine) {
  IoRequest* held = nullptr;  // prepared, not accepted yet; next to queue
  bool held_waited = false;  // replay: `held` waited for its due time already
  const bool polling = complete_min_ == 0;
  while (true) {
    bool busy = false;
    while (issuing_ && inflight_ < depth_) {
      clock_fresh_ = false;
      IoRequest* req = held;
      held = nullptr;
      bool waited = held_waited;
      held_waited = false;
      if (req == nullptr) {
        waited = false;
        req = free_.back();
        if (!NextRequest(req)) {
          issuing_ = false;
          break;
        }
        free_.pop_back();
      }
      if (BlockBusy(*req)) {  // wait for the I/O on the same block
        held = req;
        busy = true;
        break;
      }
      if (rate_limited_ && phase_ == Phase::kMain && IsData(req->op)) {
        const uint64_t due = RateDue(*req);
        if (due > now_) {
          Quiesce(engine);  // as fio: nothing in flight while ahead of the rate
          SleepUntil(due);
          if (!issuing_) {
            held = req;
            break;
          }
        }
      }
      if (spec_.replay != nullptr && phase_ == Phase::kMain && !waited) {
        WaitUntilDue(engine, replay_due_ns_);
        waited = true;
        if (!issuing_) {
          held = req;
          held_waited = true;
          break;
        }
      }
      req->start_ns = now_;
      const SubmitResult r = engine.Queue(req);
      if (r == SubmitResult::kBusy) {
        held = req;
        held_waited = waited;
        busy = true;
        break;
      }
      if (spec_.replay != nullptr && phase_ == Phase::kMain) {
        ReplayResult& rr = result_->replay;
        const uint64_t late = req->start_ns - replay_due_ns_;
        ++rr.ios;
        rr.late_sum_ns += late;
        rr.late_max_ns = std::max(rr.late_max_ns, late);
        if (late > 100000) ++rr.late_over_100us;
      }
      MarkIssued(req);
      if (r == SubmitResult::kCompleted) {
        now_ = MonotonicNs();
        req->issue_ns = req->start_ns;
        if (measuring_ && phase_ == Phase::kMain) {
          ++result_->depth_map[DepthBucket(inflight_ + 1)];
          ++result_->submit_map[BatchBucket(1)];
          ++result_->complete_map[BatchBucket(1)];
        }
        Complete(req, now_);
        free_.push_back(req);
        OnBatchDone(now_);
      } else {
        ++inflight_;
        staged_.push_back(req);
        if (staged_.size() >= batch_submit_) CommitStaged(engine);
        if (polling) ReapOnce(engine, 0);
      }
      if (spec_.thinktime_ns != 0 && phase_ == Phase::kMain &&
          completed_since_think_ >= spec_.thinktime_blocks) {
        Quiesce(engine);
        SleepUntil(now_ + spec_.thinktime_ns);
        completed_since_think_ = 0;
      }
    }
    if (!issuing_ && held != nullptr) {
      free_.push_back(held);
      held = nullptr;
    }
    if (inflight_ == 0) {
      if (!issuing_) break;
      if (busy) sched_yield();
      continue;
    }
    // Full, busy or draining: as fio's wait_for_completions(), at least one.
    const uint32_t min = std::max<uint32_t>(1, complete_min_);
    if (!ReapOnce(engine, min)) {
      if (result_->error != 0) break;
      sched_yield();  // everything still staged: the kernel said "later"
    }
  }
}

// Replay: commits what is staged, then waits until CLOCK_MONOTONIC reads
// `due_ns`, reaping completions as they come (so they are dated when they
// happen) and sleeping when nothing is in flight. A runtime deadline ends
// the wait and the issuing.
template <class E>
void JobRunner::WaitUntilDue(E& engine, uint64_t due_ns) {
  CommitStaged(engine);
  if (deadline_ns_ != 0 && due_ns > deadline_ns_) due_ns = deadline_ns_;
  while (true) {
    now_ = MonotonicNs();
    if (now_ >= due_ns) break;
    const uint32_t in_kernel = inflight_ - static_cast<uint32_t>(staged_.size());
    if (in_kernel == 0) {
      SleepUntilNs(due_ns);
      continue;
    }
    const int k = engine.ReapWithin(in_kernel, events_.data(), due_ns - now_);
    if (k < 0) {
      if (k == -EINTR || k == -EAGAIN || k == -ETIME) continue;
      RecordError(-k, ErrnoMessage("reap", -k));
      issuing_ = false;
      return;
    }
    if (k == 0) continue;
    now_ = MonotonicNs();
    for (int i = 0; i < k; ++i) {
      Complete(events_[i], now_);
      free_.push_back(events_[i]);
    }
    inflight_ -= static_cast<uint32_t>(k);
    if (measuring_) ++result_->complete_map[BatchBucket(static_cast<uint32_t>(k))];
    OnBatchDone(now_);
  }
  clock_fresh_ = false;
  OnBatchDone(now_);
}

// verify_only: walks the main phase's I/O sequence without issuing any of
// it, leaving the verify table as a finished run of the same job leaves it
// (every I/O whole, in sequence order: I/Os to one block never overlap).
void JobRunner::Replay() {
  replaying_ = true;
  IoRequest* req = free_.back();
  while (NextRequest(req)) {
    MarkIssued(req);
    if (!IsData(req->op)) continue;
    verify_table_[req->block] &= ~kInFlight;
    RecordBlockState(*req, true, write_generation_);
  }
  replaying_ = false;
}

template <class E>
void JobRunner::RunPhase(E& engine, Phase phase) {
  phase_ = phase;
  issuing_ = true;
  Loop(engine);
}

Status JobRunner::Run() {
  if (spec_.startdelay_high_ns > spec_.startdelay_ns || spec_.startdelay_ns != 0) {
    uint64_t delay = spec_.startdelay_ns;
    if (spec_.startdelay_high_ns > spec_.startdelay_ns) {
      uint64_t state = DeriveSeed(spec_.randseed, job_index_, kDelayStream);
      const uint64_t span = spec_.startdelay_high_ns - spec_.startdelay_ns + 1;
      delay +=
          static_cast<uint64_t>((static_cast<unsigned __int128>(SplitMix64(&state)) * span) >> 64);
    }
    result_->startdelay_ns = delay;
    SleepUntilNs(MonotonicNs() + delay);
  }
  start_ns_ = MonotonicNs();
  now_ = start_ns_;
  last_event_ns_ = start_ns_;
  measure_start_ns_ = start_ns_ + spec_.ramp_ns;
  deadline_ns_ = spec_.runtime_ns != 0 ? measure_start_ns_ + spec_.runtime_ns : 0;
  if (spec_.ramp_ns == 0) BeginMeasuring();

  auto run = [&](auto& engine) {
    if (spec_.verify_only) {
      Replay();
    } else {
      RunPhase(engine, Phase::kMain);
    }
    if (result_->error == 0 && spec_.end_fsync && spec_.Does(Dir::kWrite) && !spec_.verify_only) {
      const uint64_t t0 = MonotonicNs();
      int ret = fsync(target_.fd());
      now_ = MonotonicNs();
      if (ret != 0) {
        RecordError(errno, ErrnoMessage("end_fsync '" + filename_ + "'", errno));
      } else if (measuring_) {
        ++result_->sync.total_ios;
        result_->sync.lat_ns.Add(now_ - t0);
        result_->sync.lat_hist.Add(now_ - t0);
      }
      last_event_ns_ = now_;
    }
    const uint64_t main_end = last_event_ns_;
    if (measuring_) {
      result_->measured = true;
      result_->runtime_ns = main_end - measure_start_ns_;
      if (now_ > series_start_ns_) {
        bool any = false;
        for (uint64_t n : series_ios_) any |= n != 0;
        if (any) EmitSeriesPoint(main_end);
      }
      SnapshotUsage(true);
    }
    result_->elapsed_ns = main_end - start_ns_;
    const bool read_back = spec_.do_verify || spec_.verify_only;
    if (verify_ && read_back && write_generation_ != 0 && result_->error == 0) {
      // As fio: sync and drop the page cache so the reads reach the device.
      fsync(target_.fd());
      posix_fadvise(target_.fd(), 0, 0, POSIX_FADV_DONTNEED);
      deadline_ns_ = 0;
      const uint64_t t0 = MonotonicNs();
      RunPhase(engine, Phase::kVerify);
      result_->verify.verify_phase_ns = MonotonicNs() - t0;
    }
  };
  switch (spec_.ioengine) {
    case EngineKind::kPsync:
      run(static_cast<PsyncEngine&>(*engine_));
      break;
    case EngineKind::kIoUring:
      run(static_cast<IoUringEngine&>(*engine_));
      break;
    case EngineKind::kLibaio:
      run(static_cast<LibaioEngine&>(*engine_));
      break;
  }
  if (result_->verify.mismatches != 0) {
    const VerifyMismatch& m = result_->verify.first[0];
    RecordError(EILSEQ, "verify: " + std::to_string(result_->verify.mismatches) +
                            " mismatching blocks in '" + filename_ + "', first at offset " +
                            std::to_string(m.offset));
  }
  if (result_->error != 0) return Status::Runtime(result_->error_text, result_->error);
  return Status::Ok();
}

}  // namespace blkgen

#include "options.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "replay.h"
#include "units.h"

namespace blkgen {
namespace {

constexpr uint64_t kNsPerUs = 1000;
constexpr uint64_t kNsPerSec = 1000ULL * 1000 * 1000;
constexpr uint64_t kMaxIodepth = 65536;
constexpr uint64_t kMaxBs = 1ULL << 30;
constexpr size_t kMaxBsSplit = 64;      // fio's limit per direction
constexpr size_t kMaxPercentiles = 20;  // fio's limit
constexpr uint32_t kMaxNumjobs = 4096;

// fio's default percentile list (stat.c).
constexpr std::array<double, 17> kFioDefaultPercentiles = {
    1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99};

Status WithOption(std::string_view name, std::string_view value, const Status& s) {
  if (s.ok()) return s;
  return Status::Usage(std::string(name) + "=" + std::string(value) + ": " + s.message());
}

std::vector<std::string_view> Split(std::string_view v, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t at = v.find(sep, start);
    parts.push_back(v.substr(start, at == std::string_view::npos ? v.npos : at - start));
    if (at == std::string_view::npos) break;
    start = at + 1;
  }
  return parts;
}

// fio's "R[,W[,T]]" lists (bs, blockalign, rate, rate_iops, bssplit): an
// empty part keeps the direction's current value; directions after the last
// part take the last part (so "8k,32k" sets trims to 32k, "500k," leaves
// writes and trims alone).
template <class T>
Status ApplyPerDir(std::string_view v, const std::function<Status(std::string_view, T*)>& parse,
                   std::array<T, kNumDirs>* values) {
  const std::vector<std::string_view> parts = Split(v, ',');
  if (parts.size() > kNumDirs) return Status::Usage("at most 3 values (read,write,trim)");
  std::array<T, kNumDirs> out = *values;
  for (int d = 0; d < kNumDirs; ++d) {
    const std::string_view part = parts[std::min<size_t>(d, parts.size() - 1)];
    if (part.empty()) continue;
    Status s = parse(part, &out[d]);
    if (!s.ok()) return s;
  }
  *values = std::move(out);
  return Status::Ok();
}

Status ParseBlockSize(std::string_view v, uint64_t* bytes) {
  uint64_t value;
  Status s = ParseSize(v, &value);
  if (!s.ok()) return s;
  if (value == 0 || value > kMaxBs) return Status::Usage("block size must be 1..1g");
  *bytes = value;
  return Status::Ok();
}

Status ParsePercent(std::string_view v, uint32_t* pct) {
  uint64_t n;
  Status s = ParseUint(v, &n);
  if (!s.ok()) return s;
  if (n > 100) return Status::Usage("percentage must be 0..100");
  *pct = static_cast<uint32_t>(n);
  return Status::Ok();
}

Status ParseRange(std::string_view v, uint64_t lo, uint64_t hi, uint64_t* out) {
  uint64_t n;
  Status s = ParseUint(v, &n);
  if (!s.ok()) return s;
  if (n < lo || n > hi) {
    return Status::Usage("must be " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  *out = n;
  return Status::Ok();
}

template <class T>
Status ParseRangeAs(std::string_view v, uint64_t lo, uint64_t hi, T* out) {
  uint64_t n;
  Status s = ParseRange(v, lo, hi, &n);
  if (s.ok()) *out = static_cast<T>(n);
  return s;
}

Status ApplyName(std::string_view v, JobSpec* job) {
  if (v.empty()) return Status::Usage("name must not be empty");
  job->name = std::string(v);
  return Status::Ok();
}

Status ApplyFilename(std::string_view v, JobSpec* job) {
  if (v.empty()) return Status::Usage("filename must not be empty");
  if (v.find(':') != std::string_view::npos) {
    return Status::Usage("several files per job (':' in filename) are not supported yet");
  }
  job->filename = std::string(v);
  return Status::Ok();
}

Status ApplyRw(std::string_view v, JobSpec* job) {
  for (const RwModeInfo& info : kRwModes) {
    if (info.name == v) {
      job->rw = info.mode;
      return Status::Ok();
    }
  }
  if (v == "trimwrite" || v == "randtrimwrite") return Status::Usage("not supported yet");
  return Status::Usage(
      "unknown mode (read, write, randread, randwrite, rw, readwrite, randrw, trim, randtrim)");
}

Status ApplyRwmixread(std::string_view v, JobSpec* job) { return ParsePercent(v, &job->rwmixread); }

// As fio: the last of rwmixread/rwmixwrite given wins.
Status ApplyRwmixwrite(std::string_view v, JobSpec* job) {
  uint32_t w;
  Status s = ParsePercent(v, &w);
  if (s.ok()) job->rwmixread = 100 - w;
  return s;
}

Status ApplyBs(std::string_view v, JobSpec* job) {
  return ApplyPerDir<uint64_t>(v, ParseBlockSize, &job->bs);
}

// "4k/10:64k/50:32k/" per direction: blank percentages share what is left.
Status ParseBsSplit(std::string_view v, std::vector<BsSplitEntry>* out) {
  std::vector<BsSplitEntry> entries;
  uint32_t total = 0;
  size_t blank = 0;
  for (std::string_view item : Split(v, ':')) {
    const size_t slash = item.find('/');
    BsSplitEntry e;
    Status s = ParseBlockSize(item.substr(0, slash), &e.bytes);
    if (!s.ok()) return s;
    if (slash == std::string_view::npos || slash + 1 == item.size()) {
      e.percent = ~0u;  // filled in below
      ++blank;
    } else {
      s = ParsePercent(item.substr(slash + 1), &e.percent);
      if (!s.ok()) return s;
      total += e.percent;
    }
    entries.push_back(e);
  }
  if (entries.size() > kMaxBsSplit) return Status::Usage("at most 64 block sizes per direction");
  if (total > 100) return Status::Usage("percentages add up to more than 100");
  if (blank == 0 && total != 100) return Status::Usage("percentages add up to less than 100");
  if (blank > 0) {
    // fio: the remainder is split evenly; the first blank ones take the rest.
    const uint32_t left = 100 - total;
    uint32_t extra = left % blank;
    for (BsSplitEntry& e : entries) {
      if (e.percent != ~0u) continue;
      e.percent = left / static_cast<uint32_t>(blank) + (extra > 0 ? 1 : 0);
      if (extra > 0) --extra;
    }
  }
  *out = std::move(entries);
  return Status::Ok();
}

Status ApplyBsSplit(std::string_view v, JobSpec* job) {
  return ApplyPerDir<std::vector<BsSplitEntry>>(v, ParseBsSplit, &job->bssplit);
}

Status ApplyBlockalign(std::string_view v, JobSpec* job) {
  return ApplyPerDir<uint64_t>(v, ParseBlockSize, &job->blockalign);
}

Status ApplySize(std::string_view v, JobSpec* job) { return ParseSize(v, &job->size); }

Status ApplyOffset(std::string_view v, JobSpec* job) { return ParseSize(v, &job->offset); }

Status ApplyIoSize(std::string_view v, JobSpec* job) { return ParseSize(v, &job->io_size); }

Status ApplyNumjobs(std::string_view v, JobSpec* job) {
  return ParseRangeAs(v, 1, kMaxNumjobs, &job->numjobs);
}

Status ApplyIodepth(std::string_view v, JobSpec* job) {
  return ParseRangeAs(v, 1, kMaxIodepth, &job->iodepth);
}

Status ApplyBatchSubmit(std::string_view v, JobSpec* job) {
  return ParseRangeAs(v, 0, kMaxIodepth, &job->iodepth_batch_submit);
}

Status ApplyBatchCompleteMin(std::string_view v, JobSpec* job) {
  return ParseRangeAs(v, 0, kMaxIodepth, &job->iodepth_batch_complete_min);
}

Status ApplyBatchCompleteMax(std::string_view v, JobSpec* job) {
  return ParseRangeAs(v, 0, kMaxIodepth, &job->iodepth_batch_complete_max);
}

Status ApplyRuntime(std::string_view v, JobSpec* job) {
  return ParseDuration(v, kNsPerSec, &job->runtime_ns);
}

Status ApplyTimeBased(std::string_view v, JobSpec* job) { return ParseBool(v, &job->time_based); }

Status ApplyRampTime(std::string_view v, JobSpec* job) {
  return ParseDuration(v, kNsPerSec, &job->ramp_ns);
}

// fio's irange(time): "T" or "LOW-HIGH", seconds unless a unit is given.
Status ApplyStartdelay(std::string_view v, JobSpec* job) {
  const size_t dash = v.find('-');
  uint64_t lo, hi;
  Status s = ParseDuration(v.substr(0, dash), kNsPerSec, &lo);
  if (!s.ok()) return s;
  hi = lo;
  if (dash != std::string_view::npos) {
    s = ParseDuration(v.substr(dash + 1), kNsPerSec, &hi);
    if (!s.ok()) return s;
    if (hi < lo) return Status::Usage("range LOW-HIGH with LOW > HIGH");
  }
  job->startdelay_ns = lo;
  job->startdelay_high_ns = hi;
  return Status::Ok();
}

Status ApplyDirect(std::string_view v, JobSpec* job) { return ParseBool(v, &job->direct); }

Status ApplyIoengine(std::string_view v, JobSpec* job) {
  for (const EngineInfo& e : kEngines) {
    if (e.name == v) {
      job->ioengine = e.kind;
      return Status::Ok();
    }
  }
  if (v == "sync" || v == "pvsync" || v == "pvsync2" || v == "mmap" || v == "posixaio" ||
      v == "null") {
    return Status::Usage("not supported yet (io_uring, libaio, psync)");
  }
  return Status::Usage("unknown engine (io_uring, libaio, psync)");
}

Status ApplySqthreadPoll(std::string_view v, JobSpec* job) {
  return ParseBool(v, &job->sqthread_poll);
}

Status ApplyFixedbufs(std::string_view v, JobSpec* job) { return ParseBool(v, &job->fixedbufs); }

Status ParseRateBytes(std::string_view v, uint64_t* out) { return ParseSize(v, out); }

Status ApplyRate(std::string_view v, JobSpec* job) {
  return ApplyPerDir<uint64_t>(v, ParseRateBytes, &job->rate);
}

Status ParseIops(std::string_view v, uint64_t* out) { return ParseUint(v, out); }

Status ApplyRateIops(std::string_view v, JobSpec* job) {
  return ApplyPerDir<uint64_t>(v, ParseIops, &job->rate_iops);
}

Status ApplyThinktime(std::string_view v, JobSpec* job) {
  return ParseDuration(v, kNsPerUs, &job->thinktime_ns);
}

Status ApplyThinktimeBlocks(std::string_view v, JobSpec* job) {
  return ParseRangeAs(v, 1, UINT32_MAX, &job->thinktime_blocks);
}

Status ApplyFsync(std::string_view v, JobSpec* job) {
  return ParseRangeAs(v, 0, UINT32_MAX, &job->fsync_blocks);
}

Status ApplyFdatasync(std::string_view v, JobSpec* job) {
  return ParseRangeAs(v, 0, UINT32_MAX, &job->fdatasync_blocks);
}

Status ApplyEndFsync(std::string_view v, JobSpec* job) { return ParseBool(v, &job->end_fsync); }

// fio's continue_on_error: none | read | write | io | verify | all, or 0 / 1
// (1 = all). blkgen has no verify errors to go on past: "verify" is none's
// twin, "all" is "io".
Status ApplyContinueOnError(std::string_view v, JobSpec* job) {
  const uint8_t io = DirBit(Dir::kRead) | DirBit(Dir::kWrite) | DirBit(Dir::kTrim);
  if (v == "none" || v == "0" || v == "verify") {
    job->continue_on_error = 0;
  } else if (v == "read") {
    job->continue_on_error = DirBit(Dir::kRead);
  } else if (v == "write") {
    job->continue_on_error = DirBit(Dir::kWrite);
  } else if (v == "io" || v == "all" || v == "1") {
    job->continue_on_error = io;
  } else {
    return Status::Usage("continue_on_error: '" + std::string(v) +
                         "' is not one of none, read, write, io, verify, all");
  }
  return Status::Ok();
}

// random, zipf[:theta[:center]], pareto[:h[:center]], normal:stddev%[:center]
Status ApplyRandomDistribution(std::string_view v, JobSpec* job) {
  const std::vector<std::string_view> parts = Split(v, ':');
  Distribution d;
  d.text = std::string(v);
  const std::string_view kind = parts[0];
  if (kind == "random") {
    if (parts.size() > 1) return Status::Usage("random takes no value");
    job->distribution = d;
    return Status::Ok();
  }
  if (kind == "zoned" || kind == "zoned_abs") return Status::Usage("not supported yet");
  if (kind == "zipf") {
    d.kind = DistKind::kZipf;
    d.param = 1.1;  // fio's FIO_DEF_ZIPF
  } else if (kind == "pareto") {
    d.kind = DistKind::kPareto;
    d.param = 0.2;  // fio's FIO_DEF_PARETO
  } else if (kind == "normal") {
    d.kind = DistKind::kNormal;
    if (parts.size() < 2) return Status::Usage("normal needs a deviation: normal:stddev%");
  } else {
    return Status::Usage("unknown distribution (random, zipf, pareto, normal)");
  }
  if (parts.size() > 3) return Status::Usage("too many ':' values");
  if (parts.size() > 1) {
    Status s = ParseDecimal(parts[1], &d.param);
    if (!s.ok()) return s;
  }
  if (parts.size() > 2) {
    Status s = ParseDecimal(parts[2], &d.center);
    if (!s.ok()) return s;
    if (d.center > 1) return Status::Usage("center must be 0..1");
  }
  if (d.kind == DistKind::kZipf && (d.param <= 0 || d.param == 1.0)) {
    return Status::Usage("zipf theta must be > 0 and not 1");
  }
  if (d.kind == DistKind::kPareto && (d.param <= 0 || d.param >= 1)) {
    return Status::Usage("pareto h must be between 0 and 1");
  }
  if (d.kind == DistKind::kNormal && d.param > 100) {
    return Status::Usage("normal deviation must be 0..100 (%)");
  }
  job->distribution = d;
  return Status::Ok();
}

Status ApplyRandseed(std::string_view v, JobSpec* job) {
  Status s = ParseUint(v, &job->randseed);
  if (s.ok()) job->randseed_given = true;
  return s;
}

Status ApplyRandrepeat(std::string_view v, JobSpec* job) { return ParseBool(v, &job->randrepeat); }

Status ApplyNorandommap(std::string_view v, JobSpec* job) {
  return ParseBool(v, &job->norandommap);
}

Status ApplyGroupReporting(std::string_view v, JobSpec* job) {
  return ParseBool(v, &job->group_reporting);
}

// fio's float_list: "99.5:99.9", each in (0, 100], at most 20. fio sorts it.
Status ApplyPercentileList(std::string_view v, JobSpec* job) {
  std::vector<double> list;
  for (std::string_view part : Split(v, ':')) {
    double p;
    Status s = ParseDecimal(part, &p);
    if (!s.ok()) return s;
    if (p <= 0 || p > 100) return Status::Usage("each percentile must be in (0, 100]");
    list.push_back(p);
  }
  if (list.size() > kMaxPercentiles) return Status::Usage("at most 20 percentiles");
  std::sort(list.begin(), list.end());
  list.erase(std::unique(list.begin(), list.end()), list.end());
  job->percentiles = std::move(list);
  return Status::Ok();
}

Status ApplyPrioclass(std::string_view v, JobSpec* job) {
  uint32_t c;
  Status s = ParseRangeAs(v, 0, 3, &c);
  if (s.ok()) job->prioclass = c;
  return s;
}

Status ApplyPrio(std::string_view v, JobSpec* job) {
  uint32_t p;
  Status s = ParseRangeAs(v, 0, 7, &p);
  if (s.ok()) job->prio = p;
  return s;
}

Status ApplyCgroup(std::string_view v, JobSpec* job) {
  while (!v.empty() && v.front() == '/') v.remove_prefix(1);
  while (!v.empty() && v.back() == '/') v.remove_suffix(1);
  if (v.empty()) return Status::Usage("cgroup name must not be empty");
  for (std::string_view part : Split(v, '/')) {
    if (part.empty() || part == "." || part == "..") {
      return Status::Usage("cgroup name must be a path below the cgroup root");
    }
  }
  job->cgroup = std::string(v);
  return Status::Ok();
}

Status ApplyCgroupIoWeight(std::string_view v, JobSpec* job) {
  return ParseRangeAs(v, 1, 10000, &job->cgroup_io_weight);
}

Status ApplyCgroupBfqWeight(std::string_view v, JobSpec* job) {
  return ParseRangeAs(v, 1, 1000, &job->cgroup_bfq_weight);
}

// "riops=N,wiops=N,rbps=SIZE,wbps=SIZE" (',' ' ' or ':' between items).
Status ApplyCgroupIoMax(std::string_view v, JobSpec* job) {
  IoMaxLimits limits;
  std::string text(v);
  std::replace(text.begin(), text.end(), ' ', ',');
  std::replace(text.begin(), text.end(), ':', ',');
  for (std::string_view item : Split(text, ',')) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      return Status::Usage("expected KEY=VALUE, got '" + std::string(item) + "'");
    const std::string_view key = item.substr(0, eq), val = item.substr(eq + 1);
    Status s;
    if (key == "riops") {
      s = ParseUint(val, &limits.riops);
    } else if (key == "wiops") {
      s = ParseUint(val, &limits.wiops);
    } else if (key == "rbps") {
      s = ParseSize(val, &limits.rbps);
    } else if (key == "wbps") {
      s = ParseSize(val, &limits.wbps);
    } else {
      return Status::Usage("unknown key '" + std::string(key) + "' (riops, wiops, rbps, wbps)");
    }
    if (!s.ok()) return s;
  }
  if (limits.empty()) return Status::Usage("no limit given (riops, wiops, rbps, wbps)");
  job->cgroup_io_max = limits;
  return Status::Ok();
}

Status ApplyCgroupNodelete(std::string_view v, JobSpec* job) {
  return ParseBool(v, &job->cgroup_nodelete);
}

Status ApplyLogInterval(std::string_view v, JobSpec* job) {
  uint64_t ns;
  Status s = ParseDuration(v, 1000 * kNsPerUs, &ns);  // plain number = ms
  if (!s.ok()) return s;
  if (ns < 1000 * kNsPerUs) return Status::Usage("must be at least 1ms");
  job->log_interval_ns = ns;
  return Status::Ok();
}

Status ApplyVerify(std::string_view v, JobSpec* job) {
  if (v == "0") {
    job->verify = VerifyKind::kNone;
  } else if (v == "crc32c" || v == "crc32c-intel") {
    job->verify = VerifyKind::kCrc32c;
  } else {
    return Status::Usage("not supported (0, crc32c, crc32c-intel)");
  }
  return Status::Ok();
}

Status ApplyDoVerify(std::string_view v, JobSpec* job) { return ParseBool(v, &job->do_verify); }

Status ApplyVerifyOnly(std::string_view v, JobSpec* job) { return ParseBool(v, &job->verify_only); }

Status ApplyTrimPercentage(std::string_view v, JobSpec* job) {
  return ParsePercent(v, &job->trim_percentage);
}

Status ApplyTrimBacklog(std::string_view v, JobSpec* job) {
  return ParseRangeAs(v, 0, UINT32_MAX, &job->trim_backlog);
}

Status ApplyTrimBacklogBatch(std::string_view v, JobSpec* job) {
  return ParseRangeAs(v, 0, UINT32_MAX, &job->trim_backlog_batch);
}

Status ApplyTrimVerifyZero(std::string_view v, JobSpec* job) {
  return ParseBool(v, &job->trim_verify_zero);
}

Status ApplyWriteIolog(std::string_view v, JobSpec* job) {
  if (v.empty()) return Status::Usage("file name must not be empty");
  job->write_iolog = std::string(v);
  return Status::Ok();
}

// The option table: fio's names and defaults unless marked blkgen's own.
constexpr std::array<OptionDef, 66> kJobOptions = {{
    {"name", "", "job name; starts a new job", false, ApplyName},
    {"filename", "", "file or block device (default: <name>.<clone>.0)", false, ApplyFilename},
    {"rw", "read",
     "read | write | randread | randwrite | rw | readwrite | randrw | trim | randtrim", false,
     ApplyRw},
    {"readwrite", "", "alias of rw", false, ApplyRw},
    {"rwmixread", "50", "% of reads in rw/randrw (the last of rwmixread/rwmixwrite wins)", false,
     ApplyRwmixread},
    {"rwmixwrite", "", "% of writes in rw/randrw (= 100 - rwmixread)", false, ApplyRwmixwrite},
    {"bs", "4k", "bytes per I/O, R[,W[,T]] (size: k=1024, kib=1000)", false, ApplyBs},
    {"blocksize", "", "alias of bs", false, ApplyBs},
    {"bssplit", "", "weighted sizes bs/%:bs/%..., R[,W[,T]]; blank % share the rest", false,
     ApplyBsSplit},
    {"blockalign", "",
     "alignment of random offsets, R[,W[,T]] (default: the smallest bs); "
     "differing from bs turns off the random map",
     false, ApplyBlockalign},
    {"ba", "", "alias of blockalign", false, ApplyBlockalign},
    {"size", "", "bytes of I/O region and of I/O (default: to end of file/device)", false,
     ApplySize},
    {"offset", "0", "bytes; start of the I/O region", false, ApplyOffset},
    {"io_size", "", "bytes of I/O to issue within the region (default: size)", false, ApplyIoSize},
    {"io_limit", "", "alias of io_size", false, ApplyIoSize},
    {"numjobs", "1", "clones of this job, 1..4096 (files <name>.<clone>.0)", false, ApplyNumjobs},
    {"iodepth", "1", "I/Os in flight, 1..65536 (1 for psync)", false, ApplyIodepth},
    {"iodepth_batch_submit", "1", "I/Os per submit call; 0 = iodepth", false, ApplyBatchSubmit},
    {"iodepth_batch", "", "alias of iodepth_batch_submit", false, ApplyBatchSubmit},
    {"iodepth_batch_complete_min", "1",
     "completions waited for per reap when the queue is full; "
     "0 = poll without waiting",
     false, ApplyBatchCompleteMin},
    {"iodepth_batch_complete", "", "alias of iodepth_batch_complete_min", false,
     ApplyBatchCompleteMin},
    {"iodepth_batch_complete_max", "0", "completions taken per reap call; 0 = the min", false,
     ApplyBatchCompleteMax},
    {"runtime", "", "time limit (plain number = seconds; us, ms, s, m, h, d)", false, ApplyRuntime},
    {"time_based", "0", "0 | 1; repeat the region until runtime", true, ApplyTimeBased},
    {"ramp_time", "0", "time run before measuring starts (units as runtime)", false, ApplyRampTime},
    {"startdelay", "0", "delay before the job starts, T or LOW-HIGH (units as runtime)", false,
     ApplyStartdelay},
    {"direct", "0", "0 | 1; open with O_DIRECT", false, ApplyDirect},
    {"ioengine", "psync", "psync | io_uring | libaio", false, ApplyIoengine},
    {"sqthread_poll", "0", "0 | 1; io_uring: kernel submission thread (IORING_SETUP_SQPOLL)", true,
     ApplySqthreadPoll},
    {"fixedbufs", "0", "0 | 1; io_uring: registered buffers (READ/WRITE_FIXED)", true,
     ApplyFixedbufs},
    {"rate", "", "bytes/s cap, R[,W[,T]] (empty part = no cap)", false, ApplyRate},
    {"rate_iops", "", "I/O per s cap, R[,W[,T]]; exclusive with rate", false, ApplyRateIops},
    {"thinktime", "0", "stall after thinktime_blocks I/Os (plain number = us)", false,
     ApplyThinktime},
    {"thinktime_blocks", "1", "I/Os completed between stalls", false, ApplyThinktimeBlocks},
    {"fsync", "0", "fsync after every N writes; 0 = never", false, ApplyFsync},
    {"fdatasync", "0", "fdatasync after every N writes; 0 = never", false, ApplyFdatasync},
    {"end_fsync", "0", "0 | 1; fsync when the writes are done", true, ApplyEndFsync},
    {"continue_on_error", "none",
     "none | read | write | io | all; I/O errors of those directions are counted (total_err) "
     "and the job goes on",
     false, ApplyContinueOnError},
    {"random_distribution", "random",
     "random | zipf[:theta[:center]] | pareto[:h[:center]] | normal:stddev%[:center]; "
     "non-uniform ones turn off the random map",
     false, ApplyRandomDistribution},
    // fio's FIO_RANDSEED; the sequence itself differs from fio's.
    {"randseed", "0xb1899bed", "seed of the I/O sequence (integer); overrides randrepeat", false,
     ApplyRandseed},
    {"randrepeat", "1", "0 | 1; 0 without randseed: a new seed per run (recorded in the output)",
     false, ApplyRandrepeat},
    {"norandommap", "0", "0 | 1; random offsets may repeat and skip blocks", true,
     ApplyNorandommap},
    {"group_reporting", "0", "0 | 1; report this job together with the one before", true,
     ApplyGroupReporting},
    {"percentile_list", "",
     "percentiles p1:p2:..., each in (0,100], at most 20 "
     "(default: fio's 17)",
     false, ApplyPercentileList},
    {"prioclass", "", "I/O priority class 0..3 (none, realtime, best-effort, idle)", false,
     ApplyPrioclass},
    {"prio", "", "I/O priority level 0..7 (class best-effort unless prioclass)", false, ApplyPrio},
    {"cgroup", "", "cgroup v2 path below the root; the job process joins it", false, ApplyCgroup},
    // blkgen's own cgroup v2 settings (fio's cgroup_weight is cgroup v1).
    {"cgroup_io_weight", "", "blkgen: io.weight of the job's cgroup, 1..10000", false,
     ApplyCgroupIoWeight, true},
    {"cgroup_bfq_weight", "", "blkgen: io.bfq.weight of the job's cgroup, 1..1000", false,
     ApplyCgroupBfqWeight, true},
    {"cgroup_io_max", "",
     "blkgen: io.max of the job's cgroup for its device: "
     "riops=N,wiops=N,rbps=SIZE,wbps=SIZE",
     false, ApplyCgroupIoMax, true},
    {"cgroup_nodelete", "0", "0 | 1; keep cgroups blkgen created", true, ApplyCgroupNodelete},
    {"blkgen_log_interval", "100ms", "blkgen: time series interval (plain number = ms)", false,
     ApplyLogInterval, true},
    {"verify", "0",
     "0 | crc32c | crc32c-intel; header + checksum in every written block, "
     "checked on every read",
     false, ApplyVerify},
    {"do_verify", "1", "0 | 1; read back what a verify job wrote after its writes", false,
     ApplyDoVerify},
    {"verify_only", "0",
     "0 | 1; issue nothing, replay the job's I/O sequence to know what it wrote, "
     "then read it back and check it",
     true, ApplyVerifyOnly},
    {"trim_percentage", "0", "% of a verify job's written blocks queued for trimming, 0..100",
     false, ApplyTrimPercentage},
    {"trim_backlog", "0", "verify jobs: trim queued blocks after every N writes; 0 = never", false,
     ApplyTrimBacklog},
    {"trim_backlog_batch", "0", "blocks trimmed per trim_backlog; 0 = trim_backlog", false,
     ApplyTrimBacklogBatch},
    {"trim_verify_zero", "1",
     "0 | 1; a trimmed block must read back as zeros (0: as zeros, ones or its last data)", false,
     ApplyTrimVerifyZero},
    {"write_iolog", "", "write the I/Os issued as a fio iolog (version 2, no timestamps)", false,
     ApplyWriteIolog},
    {"read_iolog", "",
     "replay a fio iolog (v2, v3), a blkparse -d dump or blktrace per-CPU files "
     "(name one, <dev>.blktrace.N); replaces rw, bs and size",
     false, ApplyReadIolog},
    {"replay_time_scale", "100", "replay: % of the recorded I/O rate (200 = twice as fast)", false,
     ApplyReplayTimeScale},
    {"replay_no_stall", "0", "0 | 1; replay as fast as possible, in the recorded order", true,
     ApplyReplayNoStall},
    {"replay_redirect", "", "replay onto this file or device (replaces filename)", false,
     ApplyReplayRedirect},
    {"replay_align", "0", "replay: align offsets down to this many bytes (power of two)", false,
     ApplyReplayAlign},
    {"replay_scale", "0", "replay: divide offsets by this factor; 0 = as recorded", false,
     ApplyReplayScale},
}};

// fio options blkgen is meant to take but does not implement; refused with
// a message saying so rather than "unknown".
constexpr std::array<std::string_view, 17> kNotYetSupported = {
    "stonewall",
    "new_group",
    "thread",
    "directory",
    "lat_percentiles",
    "clat_percentiles",
    "iodepth_low",
    "loops",
    "thinktime_spin",
    "thinktime_blocks_type",
    "thinktime_iotime",
    "rate_process",
    "verify_fatal",
    "verify_backlog",
    "cgroup_weight",
    "serialize_overlap",
    "sqthread_poll_cpu",
};

const OptionDef* FindJobOption(std::string_view name) {
  for (const OptionDef& o : kJobOptions) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

struct ProgramOptionDef {
  std::string_view name;
  std::string_view help;
  bool takes_value;
};

constexpr std::array<ProgramOptionDef, 6> kProgramOptions = {{
    {"output-format", "normal | json", true},
    {"output", "write the report to this file instead of stdout", true},
    {"cgroup-root", "blkgen: where cgroup v2 is mounted [default: /sys/fs/cgroup]", true},
    {"help", "print this text", false},
    {"version", "print the version", false},
    {"option-table-json", "blkgen: print the job option table as JSON (for blklab's checks)",
     false},
}};

const ProgramOptionDef* FindProgramOption(std::string_view name) {
  for (const ProgramOptionDef& o : kProgramOptions) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

Status ApplyProgramOption(std::string_view name, std::string_view value, ProgramOptions* program) {
  if (name == "output-format") {
    if (value == "json") {
      program->format = OutputFormat::kJson;
    } else if (value == "normal") {
      program->format = OutputFormat::kNormal;
    } else {
      return Status::Usage("output-format=" + std::string(value) +
                           " is not supported (json, normal)");
    }
  } else if (name == "output") {
    if (value.empty()) return Status::Usage("output must not be empty");
    program->output_path = std::string(value);
  } else if (name == "cgroup-root") {
    if (value.empty()) return Status::Usage("cgroup-root must not be empty");
    program->cgroup_root = std::string(value);
  } else if (name == "help") {
    program->show_help = true;
  } else if (name == "version") {
    program->show_version = true;
  } else if (name == "option-table-json") {
    program->show_option_table = true;
  }
  return Status::Ok();
}

// Records `name[=value]` in `given`: a repeated option keeps its first
// position and takes the last value.
void Remember(std::vector<GivenOption>* given, std::string_view name,
              const std::optional<std::string>& value) {
  for (GivenOption& g : *given) {
    if (g.first == name) {
      g.second = value;
      return;
    }
  }
  given->emplace_back(std::string(name), value);
}

// Checks one option (name known, value present or a flag); `where` prefixes
// the error ("job.fio:3: ").
Status CheckOption(const std::string& where, const std::string& name,
                   std::optional<std::string>* value) {
  const OptionDef* def = FindJobOption(name);
  if (def == nullptr) {
    for (std::string_view later : kNotYetSupported) {
      if (later == name) return Status::Usage(where + "option '" + name + "' is not supported yet");
    }
    return Status::Usage(where + "unknown option '" + name + "'");
  }
  if (!value->has_value() && !def->value_optional) {
    return Status::Usage(where + "option '" + name + "' needs a value");
  }
  const std::string v = value->value_or("1");
  JobSpec scratch = DefaultJobSpec();
  Status s = WithOption(name, v, def->apply(v, &scratch));
  if (!s.ok()) return Status::Usage(where + s.message());
  return Status::Ok();
}

Status ApplyAll(const std::vector<GivenOption>& options, JobSpec* job) {
  for (const GivenOption& g : options) {
    const OptionDef* def = FindJobOption(g.first);
    const std::string value = g.second.value_or("1");  // only value_optional ones lack one
    Status s = WithOption(g.first, value, def->apply(value, job));
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

bool Given(const std::vector<const std::vector<GivenOption>*>& layers, std::string_view name) {
  for (const auto* layer : layers) {
    for (const GivenOption& g : *layer) {
      if (g.first == name) return true;
    }
  }
  return false;
}

// Checks combinations and applies fio's fix-ups once all of a job's options
// are in (fio's fixup_options()).
Status FinishJob(const std::vector<const std::vector<GivenOption>*>& layers, JobSpec* job,
                 std::vector<std::string>* notes) {
  const std::string who = "job '" + job->name + "': ";
  auto usage = [&](const std::string& msg) { return Status::Usage(who + msg); };
  auto note = [&](const std::string& msg) { notes->push_back(who + msg); };
  if (job->time_based && job->runtime_ns == 0) return usage("time_based needs runtime=");

  if (job->ioengine == EngineKind::kPsync && job->iodepth > 1) {
    note("psync is synchronous, queue depth capped at 1");
    job->iodepth = 1;
  }
  if (job->ioengine != EngineKind::kIoUring) {
    if (job->sqthread_poll) return usage("sqthread_poll needs ioengine=io_uring");
    if (job->fixedbufs) return usage("fixedbufs needs ioengine=io_uring");
  }
  // fio: 0 or more than iodepth means iodepth; max below min means min.
  if (job->iodepth_batch_submit == 0 || job->iodepth_batch_submit > job->iodepth) {
    job->iodepth_batch_submit = job->iodepth;
  }
  if (job->iodepth_batch_complete_max < job->iodepth_batch_complete_min) {
    job->iodepth_batch_complete_max = job->iodepth_batch_complete_min;
  }

  for (int d = 0; d < kNumDirs; ++d) {
    if (job->rate[d] != 0 && job->rate_iops[d] != 0) {
      return usage("rate and rate_iops are mutually exclusive (as in fio)");
    }
  }
  bool any_rate = false, any_iops = false;
  for (int d = 0; d < kNumDirs; ++d) {
    any_rate |= job->rate[d] != 0;
    any_iops |= job->rate_iops[d] != 0;
  }
  if (any_rate && any_iops) return usage("rate and rate_iops are mutually exclusive (as in fio)");

  for (int d = 0; d < kNumDirs; ++d) {
    const Dir dir = static_cast<Dir>(d);
    if (!job->Does(dir)) continue;
    if (job->size != 0 && job->size < job->MinBs(dir)) {
      return usage("size=" + std::to_string(job->size) + " is smaller than the block size " +
                   std::to_string(job->MinBs(dir)));
    }
    if (job->blockalign[d] != 0 && job->blockalign[d] != job->MinBs(dir)) {
      if (!job->mode().random) {
        note("blockalign applies to random I/O only; this job is sequential (as fio)");
      } else if (!job->norandommap) {
        note("blockalign= differs from the block size: random map turned off (as fio)");
        job->norandommap = true;
      }
    }
  }
  if (job->distribution.kind != DistKind::kRandom) {
    if (!job->mode().random) {
      note("random_distribution applies to random I/O only; this job is sequential");
    }
    job->norandommap = true;  // fio: a non-uniform model excludes the random map
  }
  if ((job->fsync_blocks || job->fdatasync_blocks || job->end_fsync) && !job->Does(Dir::kWrite)) {
    note("fsync/fdatasync/end_fsync have no effect: the job does not write (as fio)");
  }
  if (job->thinktime_ns == 0 && Given(layers, "thinktime_blocks")) {
    note("thinktime_blocks has no effect without thinktime");
  }
  if (job->randseed_given && Given(layers, "randrepeat")) {
    note("randseed= given: randrepeat has no effect (as fio)");
  }

  const bool cgroup_settings = job->cgroup_io_weight || job->cgroup_bfq_weight ||
                               !job->cgroup_io_max.empty() || job->cgroup_nodelete;
  if (cgroup_settings && job->cgroup.empty()) {
    return usage(
        "cgroup_io_weight, cgroup_bfq_weight, cgroup_io_max and cgroup_nodelete need "
        "cgroup=");
  }

  if (job->verify != VerifyKind::kNone) {
    uint64_t block = 0;
    for (int d = 0; d < kNumDirs; ++d) {
      const Dir dir = static_cast<Dir>(d);
      if (!job->Does(dir) || dir == Dir::kTrim) continue;
      if (!job->bssplit[d].empty()) return usage("verify needs a fixed block size (no bssplit)");
      if (block != 0 && job->bs[d] != block) {
        return usage("verify needs the same bs for reads and writes");
      }
      block = job->bs[d];
      if (job->mode().random && job->Alignment(dir) % block != 0) {
        return usage("verify needs blockalign to be a multiple of bs");
      }
    }
    if (block != 0 && block < 64) return usage("verify needs bs of at least 64 bytes");
  }
  if (job->io_size != 0) {
    for (int d = 0; d < kNumDirs; ++d) {
      const Dir dir = static_cast<Dir>(d);
      if (job->Does(dir) && job->io_size < job->MinBs(dir)) {
        return usage("io_size=" + std::to_string(job->io_size) +
                     " is smaller than the block size " + std::to_string(job->MinBs(dir)));
      }
    }
  }

  // Trims of a verify job's written blocks (fio's verify-trim).
  const bool trim_options = job->trim_percentage != 0 || job->trim_backlog != 0;
  if (trim_options) {
    if (job->verify == VerifyKind::kNone) {
      note("trim_percentage/trim_backlog have no effect without verify= (as fio)");
    } else if (!job->Does(Dir::kWrite)) {
      note("trim_percentage/trim_backlog have no effect: the job does not write");
    } else if (job->trim_backlog == 0) {
      note("trim_percentage has no effect without trim_backlog (as fio)");
    } else if (job->trim_percentage == 0) {
      note("trim_backlog has no effect without trim_percentage");
    }
  }
  if (job->verify_only) {
    if (job->verify == VerifyKind::kNone || !job->Does(Dir::kWrite)) {
      return usage("verify_only needs verify= and a job that writes");
    }
    if (job->time_based) return usage("verify_only cannot replay a time_based job (as fio)");
    if (job->runtime_ns != 0) {
      note("runtime has no effect with verify_only: the whole sequence is replayed");
    }
    if (!job->do_verify) note("verify_only verifies: do_verify=0 has no effect");
  }
  return Status::Ok();
}

Status ReadFileDefault(const std::string& path, std::string* text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Errno("job file '" + path + "'", errno ? errno : ENOENT);
  std::stringstream ss;
  ss << in.rdbuf();
  *text = ss.str();
  return Status::Ok();
}

}  // namespace

std::span<const OptionDef> JobOptionTable() { return kJobOptions; }

std::span<const std::string_view> NotYetSupportedOptions() { return kNotYetSupported; }

ParseEnv SystemParseEnv() {
  ParseEnv env;
  env.read_file = ReadFileDefault;
  env.getenv = [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
  return env;
}

JobSpec DefaultJobSpec() {
  JobSpec job;
  for (const OptionDef& o : kJobOptions) {
    if (o.default_value.empty()) continue;
    Status s = o.apply(o.default_value, &job);
    if (!s.ok()) __builtin_trap();  // the table's own defaults must parse
  }
  job.randseed_given = false;  // the default seed is not a given one
  job.percentiles.assign(kFioDefaultPercentiles.begin(), kFioDefaultPercentiles.end());
  return job;
}

Status ParseCommandLine(const std::vector<std::string>& args, CommandLine* out) {
  return ParseCommandLine(args, SystemParseEnv(), out);
}

Status ParseCommandLine(const std::vector<std::string>& args, const ParseEnv& env,
                        CommandLine* out) {
  CommandLine cl;
  // Raw options per command-line section; section 0 is global, then one per job.
  std::vector<std::vector<GivenOption>> sections(1);
  std::vector<std::string> job_files;

  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() < 3 || arg[0] != '-' || arg[1] != '-') {
      if (!arg.empty() && arg[0] != '-') {
        job_files.push_back(arg);
        continue;
      }
      return Status::Usage("unknown option '" + arg + "'");
    }
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const bool has_value = eq != std::string::npos;
    std::string value = has_value ? arg.substr(eq + 1) : std::string();

    if (const ProgramOptionDef* p = FindProgramOption(name)) {
      if (p->takes_value && !has_value) {
        if (i + 1 >= args.size()) return Status::Usage("option '" + name + "' needs a value");
        value = args[++i];
      } else if (!p->takes_value && has_value) {
        return Status::Usage("option '" + name + "' takes no value");
      }
      Status s = ApplyProgramOption(name, value, &cl.program);
      if (!s.ok()) return s;
      continue;
    }

    std::optional<std::string> given;
    if (has_value) {
      given = value;
    } else {
      const OptionDef* def = FindJobOption(name);
      if (def != nullptr && !def->value_optional && i + 1 < args.size()) given = args[++i];
    }
    Status s = CheckOption("", name, &given);
    if (!s.ok()) return s;
    if (name == "name") sections.emplace_back();
    Remember(&sections.back(), name, given);
  }

  if (cl.program.show_help || cl.program.show_version || cl.program.show_option_table) {
    *out = std::move(cl);
    return Status::Ok();
  }
  if (job_files.size() > 1) {
    return Status::Usage("several job files are not supported yet ('" + job_files[0] + "', '" +
                         job_files[1] + "')");
  }

  // Jobs before clone expansion: the option layers that make each one.
  struct PendingJob {
    std::vector<const std::vector<GivenOption>*> layers;
    std::vector<GivenOption> own;
    std::string name;  // from a job file's section header
  };
  std::vector<PendingJob> pending;
  const std::vector<GivenOption>& cmdline_globals = sections[0];
  for (const GivenOption& g : cmdline_globals) Remember(&cl.global_options, g.first, g.second);
  for (size_t j = 1; j < sections.size(); ++j) {
    pending.push_back(PendingJob{{&cmdline_globals}, sections[j], ""});
  }

  // Job file globals accumulate; each file job sees those above it.
  std::vector<std::vector<GivenOption>> file_globals;
  if (!job_files.empty()) {
    const std::string& path = job_files[0];
    std::string text;
    Status s = env.read_file(path, &text);
    if (!s.ok()) return Status::Usage(s.message());
    std::vector<JobFileSection> file_sections;
    s = ParseJobFile(path, text, env.getenv, &file_sections);
    if (!s.ok()) return s;
    file_globals.reserve(file_sections.size());  // pointers into it must stay valid
    std::vector<GivenOption> globals_so_far;
    for (const JobFileSection& sec : file_sections) {
      std::vector<GivenOption> own;
      for (const JobFileOption& o : sec.options) {
        std::optional<std::string> value = o.option.second;
        s = CheckOption(path + ":" + std::to_string(o.line) + ": ", o.option.first, &value);
        if (!s.ok()) return s;
        if (o.option.first == "name" && sec.name == "global") {
          return Status::Usage(path + ":" + std::to_string(o.line) +
                               ": name= in [global] is not supported");
        }
        Remember(&own, o.option.first, o.option.second);
      }
      if (sec.name == "global") {
        for (const GivenOption& g : own) {
          Remember(&globals_so_far, g.first, g.second);
          Remember(&cl.global_options, g.first, g.second);
        }
        continue;
      }
      file_globals.push_back(globals_so_far);
      pending.push_back(PendingJob{{&cmdline_globals, &file_globals.back()}, own, sec.name});
    }
  }
  if (pending.empty()) {
    return Status::Usage(job_files.empty() ? "no job defined (use --name=<job> or a job file)"
                                           : "job file '" + job_files[0] + "' defines no job");
  }

  std::set<std::string> iologs;
  for (PendingJob& p : pending) {
    JobSpec job = DefaultJobSpec();
    if (!p.name.empty()) job.name = p.name;
    std::vector<const std::vector<GivenOption>*> layers = p.layers;
    layers.push_back(&p.own);
    for (const auto* layer : layers) {
      Status s = ApplyAll(*layer, &job);
      if (!s.ok()) return s;
    }
    if (job.name.empty()) return Status::Usage("a job needs a name");
    job.given = p.own;
    Status s = FinishJob(layers, &job, &cl.notes);
    if (!s.ok()) return s;
    if (!job.write_iolog.empty()) {
      if (job.numjobs > 1 || !iologs.insert(job.write_iolog).second) {
        return Status::Usage("job '" + job.name + "': write_iolog=" + job.write_iolog +
                             " would be written by several jobs");
      }
    }
    for (uint32_t c = 0; c < job.numjobs; ++c) {
      JobSpec clone = job;
      clone.clone = c;
      cl.jobs.push_back(std::move(clone));
    }
  }
  *out = std::move(cl);
  return Status::Ok();
}

std::string HelpText() {
  std::string text =
      "usage: blkgen [program options] [job file] [--name=<job> [job options] ...]\n"
      "Job options before the first --name apply to every job (a job file's [global]\n"
      "overrides them for its jobs). Job files use fio's ini format.\n\nprogram options:\n";
  char line[512];
  for (const ProgramOptionDef& o : kProgramOptions) {
    std::snprintf(line, sizeof(line), "  --%-26.*s %.*s\n", int(o.name.size()), o.name.data(),
                  int(o.help.size()), o.help.data());
    text += line;
  }
  text += "\njob options (--opt=value, or opt=value in a job file):\n";
  for (const OptionDef& o : kJobOptions) {
    std::snprintf(line, sizeof(line), "  --%-26.*s %.*s", int(o.name.size()), o.name.data(),
                  int(o.help.size()), o.help.data());
    text += line;
    if (!o.default_value.empty()) {
      text += " [default: " + std::string(o.default_value) + "]";
    }
    text += "\n";
  }
  return text;
}

}  // namespace blkgen

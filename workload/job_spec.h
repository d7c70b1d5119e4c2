// JobSpec: one blkgen job as the user described it (fio's job options), after
// parsing and before running. The option table in options.cc is the single
// source of defaults; DefaultJobSpec() applies them.
// Thread-safety: a value type.
#ifndef BLKGEN_JOB_SPEC_H_
#define BLKGEN_JOB_SPEC_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace blkgen {

// Direction of one I/O. The values index per-direction arrays and match the
// order of fio's "read", "write", "trim" sections.
enum class Dir : uint8_t { kRead = 0, kWrite = 1, kTrim = 2 };
inline constexpr int kNumDirs = 3;
inline constexpr std::array<std::string_view, kNumDirs> kDirNames = {"read", "write", "trim"};

// fio's rw= values. Each mode is a set of directions plus sequential/random.
enum class RwMode : uint8_t {
  kRead,
  kWrite,
  kRandRead,
  kRandWrite,
  kReadWrite,  // "rw" / "readwrite"
  kRandRW,
  kTrim,
  kRandTrim,
};

struct RwModeInfo {
  std::string_view name;
  RwMode mode;
  uint8_t dir_mask;  // bit (1 << Dir)
  bool random;
};

inline constexpr uint8_t DirBit(Dir d) { return uint8_t(1u << static_cast<int>(d)); }

inline constexpr std::array<RwModeInfo, 9> kRwModes = {{
    {"read", RwMode::kRead, DirBit(Dir::kRead), false},
    {"write", RwMode::kWrite, DirBit(Dir::kWrite), false},
    {"randread", RwMode::kRandRead, DirBit(Dir::kRead), true},
    {"randwrite", RwMode::kRandWrite, DirBit(Dir::kWrite), true},
    {"rw", RwMode::kReadWrite, DirBit(Dir::kRead) | DirBit(Dir::kWrite), false},
    {"readwrite", RwMode::kReadWrite, DirBit(Dir::kRead) | DirBit(Dir::kWrite), false},
    {"randrw", RwMode::kRandRW, DirBit(Dir::kRead) | DirBit(Dir::kWrite), true},
    {"trim", RwMode::kTrim, DirBit(Dir::kTrim), false},
    {"randtrim", RwMode::kRandTrim, DirBit(Dir::kTrim), true},
}};

// REQUIRES: `mode` is listed in kRwModes (all enumerators are).
const RwModeInfo& InfoFor(RwMode mode);

enum class EngineKind : uint8_t { kPsync, kIoUring, kLibaio };

struct EngineInfo {
  std::string_view name;
  EngineKind kind;
};
inline constexpr std::array<EngineInfo, 3> kEngines = {{
    {"psync", EngineKind::kPsync},
    {"io_uring", EngineKind::kIoUring},
    {"libaio", EngineKind::kLibaio},
}};
std::string_view NameOf(EngineKind kind);

// fio's random_distribution models blkgen implements.
enum class DistKind : uint8_t { kRandom, kZipf, kPareto, kNormal };
struct Distribution {
  DistKind kind = DistKind::kRandom;
  double param = 0;    // zipf: theta; pareto: h; normal: stddev in % of the range
  double center = -1;  // [0, 1]: hot spot position, unhashed; < 0 = fio's default
  std::string text;    // as given, for the output
};

// One bssplit entry: `bytes` per I/O for `percent` % of a direction's I/Os.
struct BsSplitEntry {
  uint64_t bytes = 0;
  uint32_t percent = 0;
  bool operator==(const BsSplitEntry&) const = default;
};

// Limits written into the job's cgroup's io.max (0 = leave unlimited).
struct IoMaxLimits {
  uint64_t riops = 0, wiops = 0, rbps = 0, wbps = 0;
  bool empty() const { return riops == 0 && wiops == 0 && rbps == 0 && wbps == 0; }
  bool operator==(const IoMaxLimits&) const = default;
};

enum class VerifyKind : uint8_t { kNone, kCrc32c };

struct ReplayTrace;  // replay.h

// An option as written by the user, kept for the "job options" and
// "global options" sections of the output. The value is empty for a flag
// given without one (`--time_based`); fio leaves those out of its output.
using GivenOption = std::pair<std::string, std::optional<std::string>>;

struct JobSpec {
  std::string name;
  // Path of a file or block device. Empty means fio's default,
  // "<name>.<clone>.0" in the current directory (see EffectiveFilename()).
  std::string filename;
  RwMode rw = RwMode::kRead;
  uint32_t rwmixread = 50;              // % of reads in rw/randrw
  std::array<uint64_t, kNumDirs> bs{};  // bytes per I/O, per direction
  // Per direction: weighted block sizes replacing bs (empty = use bs).
  std::array<std::vector<BsSplitEntry>, kNumDirs> bssplit;
  // Per direction: alignment of random offsets in bytes (0 = the direction's
  // smallest block size).
  std::array<uint64_t, kNumDirs> blockalign{};
  uint64_t size = 0;     // bytes of the region; 0 = to end of file
  uint64_t offset = 0;   // bytes; start of the region
  uint64_t io_size = 0;  // bytes to issue; 0 = the region's size (fio's io_size)
  uint32_t numjobs = 1;
  uint32_t clone = 0;                       // which of the numjobs clones this is (0-based)
  uint32_t iodepth = 1;                     // I/Os in flight (1 for sync engines)
  uint32_t iodepth_batch_submit = 1;        // I/Os per submit call; 0 = iodepth
  uint32_t iodepth_batch_complete_min = 1;  // least completions waited for
  uint32_t iodepth_batch_complete_max = 0;  // most taken per call; 0 = the min
  uint64_t runtime_ns = 0;                  // 0 = no time limit
  bool time_based = false;                  // repeat the region until runtime_ns
  uint64_t ramp_ns = 0;                     // run unmeasured before runtime starts
  uint64_t startdelay_ns = 0;               // delay before the job starts
  uint64_t startdelay_high_ns = 0;          // > startdelay_ns: pick from the range
  bool direct = false;                      // O_DIRECT
  EngineKind ioengine = EngineKind::kPsync;
  bool sqthread_poll = false;                  // io_uring: IORING_SETUP_SQPOLL
  bool fixedbufs = false;                      // io_uring: registered buffers
  std::array<uint64_t, kNumDirs> rate{};       // bytes/s cap per direction; 0 = none
  std::array<uint64_t, kNumDirs> rate_iops{};  // I/O per s cap per direction; 0 = none
  uint64_t thinktime_ns = 0;                   // stall after thinktime_blocks I/Os
  uint32_t thinktime_blocks = 1;
  uint32_t fsync_blocks = 0;      // fsync after every N writes; 0 = never
  uint32_t fdatasync_blocks = 0;  // fdatasync after every N writes; 0 = never
  bool end_fsync = false;         // fsync when the writes are done
  // Directions (DirBit) whose I/O errors are counted (total_err) and the job
  // goes on, as fio's continue_on_error; 0: the first error ends the job.
  uint8_t continue_on_error = 0;
  Distribution distribution;
  uint64_t randseed = 0;
  bool randseed_given = false;  // randseed= set: overrides randrepeat (as fio)
  bool randrepeat = true;       // false and no randseed: a seed from getrandom(2)
  bool norandommap = false;
  bool group_reporting = false;
  // Percentiles reported for clat and lat, in percent, ascending.
  std::vector<double> percentiles;
  std::optional<uint32_t> prioclass;  // ioprio class 0..3 (fio: none = best effort)
  std::optional<uint32_t> prio;       // ioprio level 0..7
  std::string cgroup;                 // cgroup v2 path below the root; empty = none
  uint32_t cgroup_io_weight = 0;      // io.weight 1..10000; 0 = leave as is
  uint32_t cgroup_bfq_weight = 0;     // io.bfq.weight 1..1000; 0 = leave as is
  IoMaxLimits cgroup_io_max;
  bool cgroup_nodelete = false;
  uint64_t log_interval_ns = 0;  // time series interval (blkgen_log_interval)
  VerifyKind verify = VerifyKind::kNone;
  bool do_verify = true;     // read back what was written after the writes
  bool verify_only = false;  // replay the I/O sequence without issuing it, then verify
  // Trims in a verify job (fio's verify-trim): trim_percentage % of the
  // writes put their block on a trim queue; after every trim_backlog writes,
  // up to trim_backlog_batch (0 = trim_backlog) queued blocks are trimmed,
  // oldest first. trim_backlog = 0: no trims.
  uint32_t trim_percentage = 0;     // 0..100
  uint32_t trim_backlog = 0;        // writes between trim batches
  uint32_t trim_backlog_batch = 0;  // trims per batch; 0 = trim_backlog
  bool trim_verify_zero = true;     // a trimmed block must read back as zeros
  std::string write_iolog;          // fio iolog (version 2) of the I/Os issued; empty = none
  // Trace replay (replay.h): the recorded I/O sequence replaces rw, bs,
  // size and the pattern options.
  std::string read_iolog;           // iolog or blktrace to replay; empty = none
  uint32_t replay_time_scale = 100;  // %; 200 = twice as fast
  bool replay_no_stall = false;      // as fast as possible, in recorded order
  std::string replay_redirect;       // replay onto this file instead of filename
  uint64_t replay_align = 0;         // offsets aligned down to this (power of two); 0 = none
  uint64_t replay_scale = 0;         // offsets divided by this; 0 = none
  // Set by LoadReplays() before the run: the loaded trace and the data
  // directions it holds (DirBit mask), which replace rw's.
  std::shared_ptr<const ReplayTrace> replay;
  uint8_t replay_dirs = 0;

  // Options set for this job (not inherited from global), in the order
  // given; a repeated option keeps its first position and its last value.
  std::vector<GivenOption> given;

  std::string EffectiveFilename() const;
  const RwModeInfo& mode() const { return InfoFor(rw); }
  bool Does(Dir d) const {
    return ((replay != nullptr ? replay_dirs : mode().dir_mask) & DirBit(d)) != 0;
  }
  // True if the job trims blocks it wrote (verify with trim_percentage and
  // trim_backlog), whatever its rw= mode.
  bool TrimsWrittenBlocks() const {
    return verify != VerifyKind::kNone && Does(Dir::kWrite) && trim_percentage != 0 &&
           trim_backlog != 0;
  }
  // Directions the job issues: its mode's, and trims of written blocks.
  bool Issues(Dir d) const { return Does(d) || (d == Dir::kTrim && TrimsWrittenBlocks()); }
  // The smallest and largest block size of direction `d` (bssplit or bs).
  uint64_t MinBs(Dir d) const;
  uint64_t MaxBs(Dir d) const;
  // Random offsets of direction `d` are multiples of this.
  uint64_t Alignment(Dir d) const { return blockalign[int(d)] ? blockalign[int(d)] : MinBs(d); }
};

}  // namespace blkgen

#endif  // BLKGEN_JOB_SPEC_H_

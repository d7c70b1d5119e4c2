// JobSpec: one blkgen job as the user described it (fio's job options), after
// parsing and before running. The option table in options.cc is the single
// source of defaults; DefaultJobSpec() applies them.
// Thread-safety: a value type.
#ifndef BLKGEN_JOB_SPEC_H_
#define BLKGEN_JOB_SPEC_H_

#include <array>
#include <cstdint>
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
// Modes marked unsupported in kRwModes parse to a usage error naming them.
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
  bool supported;  // implemented by the job runner
};

inline constexpr uint8_t DirBit(Dir d) { return uint8_t(1u << static_cast<int>(d)); }

inline constexpr std::array<RwModeInfo, 9> kRwModes = {{
    {"read", RwMode::kRead, DirBit(Dir::kRead), false, true},
    {"write", RwMode::kWrite, DirBit(Dir::kWrite), false, true},
    {"randread", RwMode::kRandRead, DirBit(Dir::kRead), true, true},
    {"randwrite", RwMode::kRandWrite, DirBit(Dir::kWrite), true, true},
    {"rw", RwMode::kReadWrite, DirBit(Dir::kRead) | DirBit(Dir::kWrite), false, false},
    {"readwrite", RwMode::kReadWrite, DirBit(Dir::kRead) | DirBit(Dir::kWrite), false, false},
    {"randrw", RwMode::kRandRW, DirBit(Dir::kRead) | DirBit(Dir::kWrite), true, false},
    {"trim", RwMode::kTrim, DirBit(Dir::kTrim), false, false},
    {"randtrim", RwMode::kRandTrim, DirBit(Dir::kTrim), true, false},
}};

// REQUIRES: `mode` is listed in kRwModes (all enumerators are).
const RwModeInfo& InfoFor(RwMode mode);

enum class EngineKind : uint8_t { kPsync, kIoUring };

struct EngineInfo {
  std::string_view name;
  EngineKind kind;
};
inline constexpr std::array<EngineInfo, 2> kEngines = {{
    {"psync", EngineKind::kPsync},
    {"io_uring", EngineKind::kIoUring},
}};
std::string_view NameOf(EngineKind kind);

// An option as written by the user, kept for the "job options" and
// "global options" sections of the output. The value is empty for a flag
// given without one (`--time_based`); fio leaves those out of its output.
using GivenOption = std::pair<std::string, std::optional<std::string>>;

struct JobSpec {
  std::string name;
  // Path of a file or block device. Empty means fio's default,
  // "<name>.0.0" in the current directory (see EffectiveFilename()).
  std::string filename;
  RwMode rw = RwMode::kRead;
  std::array<uint64_t, kNumDirs> bs{};  // bytes per I/O, per direction
  uint64_t size = 0;                    // bytes of the region; 0 = to end of file
  uint64_t offset = 0;                  // bytes; start of the region
  uint32_t iodepth = 1;                 // I/Os in flight (1 for sync engines)
  uint64_t runtime_ns = 0;              // 0 = no time limit
  bool time_based = false;              // repeat the region until runtime_ns
  uint64_t ramp_ns = 0;                 // run unmeasured before runtime starts
  bool direct = false;                  // O_DIRECT
  EngineKind ioengine = EngineKind::kPsync;
  uint64_t randseed = 0;
  // Percentiles reported for clat and lat, in percent.
  std::vector<double> percentiles;

  // Options set for this job (not inherited from global), in command-line
  // order; a repeated option keeps its first position and its last value.
  std::vector<GivenOption> given;

  std::string EffectiveFilename() const;
};

}  // namespace blkgen

#endif  // BLKGEN_JOB_SPEC_H_

// A preconditioned SSD's FTL state saved once to a file and loaded at later
// starts instead of replaying the precondition (a steady drive of 1 TB takes
// tens of seconds to build). A file is keyed by everything that decides the
// state: the drive's [ssd] section as parsed (every key, canonical text), the
// seed, the file format and a hash of the library's own sources compiled in
// (DEVMODEL_SOURCE_HASH), so a changed library never reads an old file.
// Files are written to a temporary name and renamed; a file that does not
// match in every respect (magic, version, key, size, checksums, the FTL's
// own checks) is never used: the caller replays and rewrites it.
// Disk: a file holds the L2P (4 bytes per mapping unit) and the block
// metadata (8 bytes per block and a few bytes per die); the P2L arrays are
// rebuilt from the L2P. A directory keeps at most kMaxFiles files and
// kMaxBytes in all, least recently used removed first.
// Thread-safety: the functions share no state; distinct processes may save
// and load the same key at once.
#ifndef DEVMODEL_SRC_STATE_CACHE_H_
#define DEVMODEL_SRC_STATE_CACHE_H_

#include <cstdint>
#include <string>

#include "ftl.h"

namespace devmodel::internal {

inline constexpr std::uint32_t kStateFormatVersion = 1;
inline constexpr int kStateCacheMaxFiles = 8;
inline constexpr std::uint64_t kStateCacheMaxBytes = std::uint64_t{4} << 30;

// The hash of libdevmodel's sources this library was built from (hex).
const char* DevmodelSourceHash();

// The full key of a drive's state: `config_text` (the canonical [ssd]
// section), `seed`, the format version and DevmodelSourceHash().
std::string FtlStateKey(const std::string& config_text, std::uint64_t seed);

// The file that holds `key`'s state under `dir`.
std::string FtlStatePath(const std::string& dir, const std::string& key);

// Loads `key`'s state into the fresh `ftl` (Ftl::LoadState). False with
// *note saying why if there is no usable file (none: *note empty); the FTL
// is then untouched.
bool LoadFtlState(const std::string& dir, const std::string& key, Ftl* ftl, std::string* note);

// Saves `ftl`'s state under `key` (temporary file, rename), then prunes the
// directory to the limits above. False with *note on failure (the drive is
// unaffected: the next start replays again).
// REQUIRES: ftl.CanSaveState().
bool SaveFtlState(const std::string& dir, const std::string& key, const Ftl& ftl,
                  std::string* note);

}  // namespace devmodel::internal

#endif  // DEVMODEL_SRC_STATE_CACHE_H_

// Profile text for the fuzz targets: generates device profiles (TOML) from
// fuzzer bytes, valid or not, and tells whether building one is cheap enough
// for a fuzzing iteration. Keys, types and ranges come from
// devmodel::ProfileKeyReference(), the table the loader validates against,
// so a key added there is fuzzed without touching this file.
// Thread-safety: none (fuzz targets are single-threaded).
#ifndef DEVMODEL_FUZZ_PROFILE_TEXT_H_
#define DEVMODEL_FUZZ_PROFILE_TEXT_H_

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <string>

namespace devmodel::fuzz {

// A profile made from `data`: a small valid device of a random model (or a
// shipped profile) with some keys replaced by values inside their range, at
// its bounds, beyond it, of the wrong type, removed, or unknown keys and
// sections added. Consumes some of `data`.
std::string GenerateProfile(FuzzedDataProvider& data);

// True if LoadProfile on `toml_text`, a profile CheckProfile accepted, builds
// its state in well under a millisecond or so: an SSD with few erase blocks,
// preconditioned only if small. Everything else (HDD, cloud, zero) is cheap.
bool CheapToBuild(const std::string& toml_text);

}  // namespace devmodel::fuzz

#endif  // DEVMODEL_FUZZ_PROFILE_TEXT_H_

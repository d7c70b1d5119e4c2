// Device profiles: one TOML file per device (devmodel/profiles/*.toml) that
// names a model and sets every figure, with its unit in the key name
// (`page_read_us`, `zone_mb_s`) and its source in a comment. Loading
// validates strictly: an unknown key, a wrong type or a value out of range is
// an error naming the file, the line, the key and the allowed range.
// Thread-safety: the functions are reentrant; they share no state.
#ifndef DEVMODEL_PROFILE_H_
#define DEVMODEL_PROFILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "devmodel/device.h"

namespace devmodel {

// Builds the device a profile file describes. `seed` feeds every random
// choice (preconditioning, network jitter). On error returns nullptr and sets
// *error to "<path>:<line>: <what>".
std::unique_ptr<Device> LoadProfile(const std::string& path, std::uint64_t seed,
                                    std::string* error);

// Same, from TOML text; `name` stands in for the path in error messages.
std::unique_ptr<Device> LoadProfileFromString(const std::string& toml_text, const std::string& name,
                                              std::uint64_t seed, std::string* error);

// How LoadProfile builds a device beyond what the profile says.
struct LoadOptions {
  // Directory for the built state of SSDs preconditioned "steady", one file
  // per [ssd] section and seed (SsdStateCache); empty: replay at every start.
  std::string state_cache_dir;
  // Build an SSD factory-fresh whatever its precondition says: its state is
  // about to be loaded (Device::LoadState), which holds the FTL's.
  bool without_precondition = false;
};
std::unique_ptr<Device> LoadProfile(const std::string& path, std::uint64_t seed,
                                    const LoadOptions& options, std::string* error);
std::unique_ptr<Device> LoadProfileFromString(const std::string& toml_text, const std::string& name,
                                              std::uint64_t seed, const LoadOptions& options,
                                              std::string* error);

// What CheckProfile learned about a valid profile.
struct ProfileSummary {
  std::string model;  // "ssd", "hdd", "cloud" or "zero"
  std::uint64_t capacity_bytes = 0;
  std::uint32_t logical_block_bytes = 0;
  std::uint32_t rotation_rate = 1;  // ATA IDENTIFY word 217: rpm, 1 = non-rotating
  bool deadlines_final = true;
};

// Validates a profile exactly as LoadProfile does (same messages) without
// building the device's state: no mapping tables, no preconditioning, so it
// takes microseconds for any size. On success fills *summary (may be null).
bool CheckProfile(const std::string& path, ProfileSummary* summary, std::string* error);
bool CheckProfileFromString(const std::string& toml_text, const std::string& name,
                            ProfileSummary* summary, std::string* error);

// One line per accepted key: "<section>.<key> <type> [lo, hi] <unit>".
// Generated from the same table the loader validates against.
std::string ProfileKeyReference();

// The same keys, each with the value a profile that leaves it out gets.
struct ProfileKeyInfo {
  std::string section;  // "ssd", "fault", ...
  std::string name;
  std::string allowed;  // the key's line of ProfileKeyReference() after "<section>.<key>: "
  bool has_default = false;  // false for text and list keys
  double default_value = 0;  // in the key's unit; booleans 0 or 1
};
std::vector<ProfileKeyInfo> ProfileKeys();

}  // namespace devmodel

#endif  // DEVMODEL_PROFILE_H_

#include "job_spec.h"

#include <algorithm>

namespace blkgen {

const RwModeInfo& InfoFor(RwMode mode) {
  for (const RwModeInfo& info : kRwModes) {
    if (info.mode == mode) return info;
  }
  __builtin_unreachable();
}

std::string_view NameOf(EngineKind kind) {
  for (const EngineInfo& e : kEngines) {
    if (e.kind == kind) return e.name;
  }
  return "?";
}

std::string JobSpec::EffectiveFilename() const {
  if (!replay_redirect.empty()) return replay_redirect;
  return filename.empty() ? name + "." + std::to_string(clone) + ".0" : filename;
}

uint64_t JobSpec::MinBs(Dir d) const {
  const auto& split = bssplit[int(d)];
  if (split.empty()) return bs[int(d)];
  uint64_t m = split[0].bytes;
  for (const BsSplitEntry& e : split) m = std::min(m, e.bytes);
  return m;
}

uint64_t JobSpec::MaxBs(Dir d) const {
  const auto& split = bssplit[int(d)];
  if (split.empty()) return bs[int(d)];
  uint64_t m = 0;
  for (const BsSplitEntry& e : split) m = std::max(m, e.bytes);
  return m;
}

}  // namespace blkgen

#include "job_spec.h"

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
  return filename.empty() ? name + ".0.0" : filename;
}

}  // namespace blkgen

// Fuzz target: arbitrary bytes as a device profile. Contract checked:
// CheckProfileFromString never crashes, leaks or hits UB on any input; a
// rejected profile gets a message that starts with the file's name; an
// accepted one builds with LoadProfileFromString (when cheap) to a device of
// the size CheckProfile reported, and its counters are valid JSON.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "devmodel/profile.h"
#include "profile_text.h"

namespace {

[[noreturn]] void Violation(const char* what, const std::string& detail) {
  std::fprintf(stderr, "contract violation: %s\n%s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string name = "fuzz.toml";
  devmodel::ProfileSummary summary;
  std::string error;
  if (!devmodel::CheckProfileFromString(text, name, &summary, &error)) {
    if (error.rfind(name + ":", 0) != 0) Violation("error does not name the file", error);
    return 0;
  }
  if (!error.empty()) Violation("error set on success", error);
  if (summary.capacity_bytes == 0 || summary.capacity_bytes % summary.logical_block_bytes != 0) {
    Violation("accepted profile with a bad capacity", text);
  }
  if (!devmodel::fuzz::CheapToBuild(text)) return 0;
  auto device = devmodel::LoadProfileFromString(text, name, 1, &error);
  if (device == nullptr) Violation("CheckProfile accepted what LoadProfile refused", error);
  if (device->capacity_bytes() != summary.capacity_bytes ||
      device->logical_block_bytes() != summary.logical_block_bytes ||
      device->deadlines_final() != summary.deadlines_final) {
    Violation("CheckProfile's summary differs from the device", text);
  }
  if (!nlohmann::json::accept(device->CountersJson())) {
    Violation("counters are not JSON", device->CountersJson());
  }
  return 0;
}

// devmodel-info: loads a device profile through the C ABI, exactly as the
// patched QEMU does, and prints what the harness needs to know about the
// drive as one JSON object:
//   {"profile": PATH, "version": ..., "capacity_bytes": ..., "logical_block_bytes": ...,
//    "rotation_rate": ..., "deadlines_final": true|false, "counters": {...}}
// A profile that does not load prints the library's message (file, key,
// allowed values) on stderr and exits 2.
//
// With --check the drive's state is not built (no mapping tables, no
// preconditioning: microseconds for any size, where opening a preconditioned
// 1 TB SSD takes seconds; no seed, which only the state uses); the same validation and messages, the same keys
// but "counters", and "model" ("ssd", "hdd", "cloud" or "zero") besides.
//
// Usage: devmodel-info PROFILE [SEED]
//        devmodel-info --check PROFILE
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "devmodel/devmodel.h"
#include "devmodel/profile.h"

namespace {

int Check(const char* path) {
  devmodel::ProfileSummary s;
  std::string error;
  if (!devmodel::CheckProfile(path, &s, &error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 2;
  }
  const nlohmann::json out = {
      {"profile", path},
      {"version", devmodel_version()},
      {"model", s.model},
      {"capacity_bytes", s.capacity_bytes},
      {"logical_block_bytes", s.logical_block_bytes},
      {"rotation_rate", s.rotation_rate},
      {"deadlines_final", s.deadlines_final},
  };
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const bool check = argc > 1 && std::strcmp(argv[1], "--check") == 0;
  if (check) {
    --argc;
    ++argv;
  }
  if (argc < 2 || argc > (check ? 2 : 3)) {
    std::fprintf(stderr, "usage: devmodel-info PROFILE [SEED]\n       devmodel-info --check PROFILE\n");
    return 2;
  }
  uint64_t seed = 0;
  if (argc == 3) {
    char* end = nullptr;
    seed = std::strtoull(argv[2], &end, 0);
    if (*argv[2] == '\0' || *end != '\0') {
      std::fprintf(stderr, "devmodel-info: SEED '%s' is not an unsigned integer\n", argv[2]);
      return 2;
    }
  }
  if (check) return Check(argv[1]);
  char* err = nullptr;
  devmodel_t* model = devmodel_open(argv[1], seed, &err);
  if (model == nullptr) {
    std::fprintf(stderr, "%s\n", err != nullptr ? err : "devmodel_open failed");
    devmodel_free(err);
    return 2;
  }
  char* counters = devmodel_counters_json(model, &err);
  nlohmann::json out = {
      {"profile", argv[1]},
      {"version", devmodel_version()},
      {"capacity_bytes", devmodel_capacity_bytes(model)},
      {"logical_block_bytes", devmodel_logical_block_bytes(model)},
      {"rotation_rate", devmodel_rotation_rate(model)},
      {"deadlines_final", devmodel_deadlines_final(model) != 0},
      {"counters", counters != nullptr ? nlohmann::json::parse(counters) : nlohmann::json()},
  };
  devmodel_free(counters);
  devmodel_free(err);
  devmodel_close(model);
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

// devmodel-info: loads a device profile through the C ABI, exactly as the
// patched QEMU does, and prints what the harness needs to know about the
// drive as one JSON object:
//   {"profile": PATH, "version": ..., "capacity_bytes": ..., "logical_block_bytes": ...,
//    "rotation_rate": ..., "deadlines_final": true|false, "counters": {...}}
// A profile that does not load prints the library's message (file, key,
// allowed values) on stderr and exits 2.
//
// Usage: devmodel-info PROFILE [SEED]
#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "devmodel/devmodel.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: devmodel-info PROFILE [SEED]\n");
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

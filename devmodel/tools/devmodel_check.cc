// devmodel-check: validates device profiles from the command line, with the
// messages QEMU would print (names the file, the line and the key).
//
//   devmodel-check PROFILE...          validate without building the drive's
//                                      state (fast for any size)
//   devmodel-check --open PROFILE...   open each through the C ABI, as QEMU
//                                      does (builds it: preconditioning runs)
//   devmodel-check --keys              every accepted key with its range
//   devmodel-check --key-defaults      "<section>.<key> <default>" for each number and
//                                      boolean key (booleans 0/1; in the key's unit)
//
// Prints "PROFILE: ok: <model>, <capacity> bytes, <block>-byte blocks" per
// valid profile on stdout and "devmodel-check: <message>" per invalid one on
// stderr. Exit status: 0 all valid, 2 any invalid or a usage error.
#include <cstdio>
#include <string>
#include <vector>

#include "devmodel/devmodel.h"
#include "devmodel/profile.h"

namespace {

constexpr int kExitInvalid = 2;

int Usage() {
  std::fputs(
      "usage: devmodel-check [--open] PROFILE...\n       devmodel-check --keys\n"
      "       devmodel-check --key-defaults\n",
      stderr);
  return kExitInvalid;
}

bool Check(const std::string& path) {
  devmodel::ProfileSummary s;
  std::string error;
  if (!devmodel::CheckProfile(path, &s, &error)) {
    std::fprintf(stderr, "devmodel-check: %s\n", error.c_str());
    return false;
  }
  std::printf("%s: ok: %s, %llu bytes, %u-byte blocks\n", path.c_str(), s.model.c_str(),
              static_cast<unsigned long long>(s.capacity_bytes), s.logical_block_bytes);
  return true;
}

// devmodel_open, then the summary line (the same messages by construction;
// the fuzz target devmodel_abi_fuzz checks that they agree).
bool Open(const std::string& path) {
  char* err = nullptr;
  devmodel_t* m = devmodel_open(path.c_str(), 1, &err);
  if (m == nullptr) {
    std::fprintf(stderr, "devmodel-check: %s\n", err != nullptr ? err : "unknown error");
    devmodel_free(err);
    return false;
  }
  devmodel_close(m);
  return Check(path);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> paths;
  bool open = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--open") {
      open = true;
    } else if (arg == "--keys") {
      std::fputs(devmodel::ProfileKeyReference().c_str(), stdout);
      return 0;
    } else if (arg == "--key-defaults") {
      for (const devmodel::ProfileKeyInfo& k : devmodel::ProfileKeys()) {
        if (k.has_default) {
          std::printf("%s.%s %.15g\n", k.section.c_str(), k.name.c_str(), k.default_value);
        }
      }
      return 0;
    } else if (arg == "--help" || arg == "-h") {
      Usage();
      return 0;
    } else if (arg.rfind("--", 0) == 0) {
      std::fprintf(stderr, "devmodel-check: unknown option '%s'\n", arg.c_str());
      return Usage();
    } else {
      paths.push_back(arg);
    }
  }
  if (paths.empty()) return Usage();
  bool ok = true;
  for (const std::string& p : paths) ok = (open ? Open(p) : Check(p)) && ok;
  return ok ? 0 : kExitInvalid;
}

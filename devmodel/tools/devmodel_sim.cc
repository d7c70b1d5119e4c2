// devmodel-sim: runs fio-like closed-loop jobs on a device profile's virtual
// clock (see sim.h) and prints fio-style JSON: per job and direction
// total_ios, io_bytes, bw_bytes, iops and clat_ns with fio's percentiles,
// then the model's counters. The profile is opened through the C ABI as
// QEMU opens it. Same arguments, same bytes.
//
// Usage: devmodel-sim [--seed N] [--ramp TIME] [--state-cache DIR]
//                     [--load-state FILE] [--save-state FILE]
//                     [--bw-log PREFIX --log-avg-msec N] --runtime TIME PROFILE JOB...
//   --state-cache DIR: keep a steady-preconditioned drive's built state in
//         DIR (devmodel_open_cached); without it the state is replayed.
//   --load-state FILE: start from the drive a run with --save-state left
//         (devmodel_open_state, at time 0; the model's seed is the saved
//         one, --seed still draws the jobs' offsets). Same profile text only.
//   --save-state FILE: at the end, complete the requests still in flight
//         (not measured) and save the model's whole state to FILE
//         (devmodel_save_state), e.g. after a fill, for later runs. The
//         counters printed then include the completed requests.
//   --bw-log PREFIX, --log-avg-msec N: each job's bandwidth per N ms as
//         fio's write_bw_log with log_avg_msec writes it, in PREFIX_bw.J.log
//         (J: the job's index + 1), e.g. a fill's fill_bw.1.log.
//   JOB = NAME:key=value,...  keys: rw (read, write, randread, randwrite,
//         rw, randrw), bs (4k), iodepth, rwmixread, rate (READ[,WRITE] in
//         bytes/s; ,W limits writes only), offset, size, io_size (bytes the
//         job issues, then it ends: fio without time_based; --runtime then
//         caps it), queue (NVMe SQ id; default: the job's index + 1)
//   e.g. devmodel-sim --ramp 1s --runtime 2s drive.toml reader:rw=randread,iodepth=1
//          writer:rw=randwrite,iodepth=256,rate=,100000000
// Exit status: 0, or 2 with a message on stderr (bad arguments, a profile
// that does not load, a request the model refuses).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "devmodel/devmodel.h"
#include "sim.h"

namespace {

constexpr int kExitError = 2;

int Fail(const std::string& message) {
  std::fprintf(stderr, "devmodel-sim: %s\n", message.c_str());
  return kExitError;
}

int Usage() {
  std::fputs(
      "usage: devmodel-sim [--seed N] [--ramp TIME] [--state-cache DIR] [--load-state FILE] "
      "[--save-state FILE] [--bw-log PREFIX --log-avg-msec N] --runtime TIME PROFILE "
      "NAME:key=value,...\n"
      "  job keys: rw bs iodepth rwmixread rate offset size io_size queue (see the source's "
      "header)\n",
      stderr);
  return kExitError;
}

}  // namespace

int main(int argc, char** argv) {
  devmodel::sim::SimSpec spec;
  std::string profile, error, state_cache, bw_log, load_state, save_state;
  bool have_runtime = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--help" || arg == "-h") {
      Usage();
      return 0;
    } else if (arg == "--seed" && has_value) {
      char* end = nullptr;
      const std::string v = argv[++i];
      spec.seed = std::strtoull(v.c_str(), &end, 0);
      if (v.empty() || *end != '\0' || v[0] == '-') {
        return Fail("--seed '" + v + "' is not an unsigned integer");
      }
    } else if (arg == "--state-cache" && has_value) {
      state_cache = argv[++i];
      if (state_cache.empty()) return Fail("--state-cache needs a directory");
    } else if (arg == "--load-state" && has_value) {
      load_state = argv[++i];
      if (load_state.empty()) return Fail("--load-state needs a file");
    } else if (arg == "--save-state" && has_value) {
      save_state = argv[++i];
      if (save_state.empty()) return Fail("--save-state needs a file");
    } else if (arg == "--bw-log" && has_value) {
      bw_log = argv[++i];
      if (bw_log.empty()) return Fail("--bw-log needs a file name prefix");
    } else if (arg == "--log-avg-msec" && has_value) {
      char* end = nullptr;
      const std::string v = argv[++i];
      const unsigned long long ms = std::strtoull(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || v[0] == '-' || ms == 0 || ms > 3600000) {
        return Fail("--log-avg-msec '" + v + "': expected an integer in [1, 3600000]");
      }
      spec.log_interval_ns = ms * 1000000;
    } else if (arg == "--ramp" && has_value) {
      if (!devmodel::sim::ParseTime(argv[++i], &spec.ramp_ns, &error)) {
        return Fail("--ramp " + error);
      }
    } else if (arg == "--runtime" && has_value) {
      if (!devmodel::sim::ParseTime(argv[++i], &spec.runtime_ns, &error)) {
        return Fail("--runtime " + error);
      }
      have_runtime = true;
    } else if (arg.rfind("--", 0) == 0) {
      Fail("unknown option or missing value: '" + arg + "'");
      return Usage();
    } else if (profile.empty()) {
      profile = arg;
    } else {
      devmodel::sim::JobSpec job;
      if (!devmodel::sim::ParseJob(arg, &job, &error)) return Fail(error);
      spec.jobs.push_back(job);
    }
  }
  if (profile.empty() || spec.jobs.empty() || !have_runtime) return Usage();
  if (spec.runtime_ns == 0) return Fail("--runtime must be above 0");
  if (bw_log.empty() != (spec.log_interval_ns == 0)) {
    return Fail("--bw-log and --log-avg-msec go together");
  }

  if (!load_state.empty() && !state_cache.empty()) {
    return Fail("--load-state and --state-cache exclude each other (a loaded state is built)");
  }

  char* err = nullptr;
  devmodel_t* model =
      !load_state.empty()
          ? devmodel_open_state(profile.c_str(), load_state.c_str(), 0, &err)
          : devmodel_open_cached(profile.c_str(), spec.seed,
                                 state_cache.empty() ? nullptr : state_cache.c_str(), &err);
  if (model == nullptr) {
    const std::string message = err != nullptr ? err : "devmodel_open failed";
    devmodel_free(err);
    return Fail(message);
  }
  std::vector<devmodel::sim::JobResult> results;
  std::uint64_t idle_ns = 0;
  if (!devmodel::sim::RunAndDrain(model, spec, &results, save_state.empty() ? nullptr : &idle_ns,
                                  &error)) {
    devmodel_close(model);
    return Fail(profile + ": " + error);
  }
  if (!save_state.empty() && devmodel_save_state(model, idle_ns, save_state.c_str(), &err) != 1) {
    const std::string message = err != nullptr ? err : "devmodel_save_state failed";
    devmodel_free(err);
    devmodel_close(model);
    return Fail(message);
  }
  for (std::size_t j = 0; !bw_log.empty() && j < results.size(); ++j) {
    const std::string path = bw_log + "_bw." + std::to_string(j + 1) + ".log";
    std::ofstream out(path);
    out << devmodel::sim::BandwidthLog(spec, spec.jobs[j], results[j]);
    if (!out.flush()) {
      devmodel_close(model);
      return Fail(path + ": cannot be written");
    }
  }
  char* counters = devmodel_counters_json(model, &err);
  const std::string text =
      devmodel::sim::ResultJson(profile, spec, results, counters != nullptr ? counters : "");
  devmodel_free(counters);
  devmodel_free(err);
  devmodel_close(model);
  std::fputs(text.c_str(), stdout);
  return 0;
}

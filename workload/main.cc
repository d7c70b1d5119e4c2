// blkgen: the in-guest workload driver. Parses fio-style options, runs each
// job in its own process, prints fio-compatible JSON or a fio-like summary.
// Exit codes: 0 all jobs ran without error, 1 a job failed (its partial
// results are still reported), 2 usage error.
#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "job_processes.h"
#include "json_output.h"
#include "normal_output.h"
#include "option_table_json.h"
#include "options.h"
#include "replay.h"
#include "report.h"

namespace blkgen {
namespace {

constexpr int kExitJobFailed = 1;
constexpr int kExitUsage = 2;

// Writes `text` to `path` atomically (temp file in the same directory, then
// rename), so a reader never sees a half-written report.
bool WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  FILE* f = fopen(tmp.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "blkgen: %s\n", ErrnoMessage("open '" + tmp + "'", errno).c_str());
    return false;
  }
  const bool written = fwrite(text.data(), 1, text.size(), f) == text.size();
  const int write_err = errno;
  if (fclose(f) != 0 || !written) {
    std::fprintf(stderr, "blkgen: %s\n",
                 ErrnoMessage("write '" + tmp + "'", written ? errno : write_err).c_str());
    unlink(tmp.c_str());
    return false;
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    std::fprintf(stderr, "blkgen: %s\n", ErrnoMessage("rename to '" + path + "'", errno).c_str());
    unlink(tmp.c_str());
    return false;
  }
  return true;
}

int Main(int argc, char** argv) {
  CommandLine cl;
  const Status parsed = ParseCommandLine(std::vector<std::string>(argv + 1, argv + argc), &cl);
  if (!parsed.ok()) {
    std::fprintf(stderr, "blkgen: %s\n", parsed.message().c_str());
    return kExitUsage;
  }
  if (cl.program.show_help) {
    std::fputs(HelpText().c_str(), stdout);
    return 0;
  }
  if (cl.program.show_option_table) {
    std::fputs(OptionTableJson().c_str(), stdout);
    return 0;
  }
  if (cl.program.show_version) {
    std::printf("%.*s\n", int(kBlkgenVersion.size()), kBlkgenVersion.data());
    return 0;
  }
  const Status loaded = LoadReplays(&cl.jobs, &cl.notes);
  if (!loaded.ok()) {
    std::fprintf(stderr, "blkgen: %s\n", loaded.message().c_str());
    return kExitUsage;
  }
  for (const std::string& note : cl.notes) std::fprintf(stderr, "note: %s\n", note.c_str());

  const bool normal = cl.program.format == OutputFormat::kNormal;
  const bool to_stdout = cl.program.output_path.empty();
  std::string report;
  if (normal) {
    if (to_stdout) {
      std::fputs(FormatBanner(cl).c_str(), stdout);
    } else {
      report = FormatBanner(cl);
    }
  }
  std::fflush(stdout);
  std::fflush(stderr);

  ResolveSeeds(&cl.jobs);
  SharedResults shared(cl.jobs.size());
  SharedSeries series(cl.jobs);
  if (!shared.ok() || !series.ok()) {
    std::fprintf(stderr, "blkgen: %s\n", ErrnoMessage("mmap", errno).c_str());
    return kExitJobFailed;
  }
  RunContext context;
  context.cgroup_root = cl.program.cgroup_root;
  RunOutcome outcome = RunJobsInProcesses(cl.jobs, shared.span(), &series, context);
  for (const std::string& w : outcome.warnings) std::fprintf(stderr, "blkgen: %s\n", w.c_str());

  std::vector<const JobResult*> results;
  for (const JobResult& r : shared.span()) results.push_back(&r);
  RunData run;
  run.results = results;
  for (size_t i = 0; i < cl.jobs.size(); ++i) run.series.push_back(series.of(i));
  run.disk_util = std::move(outcome.disk_util);
  if (normal) {
    report += FormatNormalReport(cl, run);
  } else {
    timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    const WallClock wall{static_cast<int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1000000};
    report = FormatJsonReport(cl, run, wall);
  }

  bool ok = true;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i]->error != 0) {
      std::fprintf(stderr, "blkgen: job '%s': %s\n", cl.jobs[i].name.c_str(),
                   results[i]->error_text);
      const VerifyResult& v = results[i]->verify;
      for (uint32_t k = 0; k < v.recorded; ++k) {
        const VerifyMismatch& m = v.first[k];
        std::fprintf(stderr,
                     "blkgen: job '%s': verify mismatch at offset %llu: ", cl.jobs[i].name.c_str(),
                     static_cast<unsigned long long>(m.offset));
        // A trimmed block: zeros were expected (trim_verify_zero=0: or ones or
        // the block as written before the trim, which `expected` describes).
        if (m.trimmed) {
          std::fprintf(stderr, "trimmed block, expected zeros%s",
                       cl.jobs[i].trim_verify_zero ? " (before the trim: " : ", ones or ");
        } else {
          std::fprintf(stderr, "expected ");
        }
        std::fprintf(stderr, "magic=%#x offset=%llu length=%u crc32c=%#x", m.expected.magic,
                     static_cast<unsigned long long>(m.expected.offset), m.expected.length,
                     m.expected.crc32c);
        if (m.writer_checked) {
          std::fprintf(stderr, " job=%u generation=%llu", m.expected.job,
                       static_cast<unsigned long long>(m.expected.generation));
        }
        if (m.trimmed && cl.jobs[i].trim_verify_zero) std::fputc(')', stderr);
        std::fprintf(
            stderr, "; found magic=%#x offset=%llu length=%u crc32c=%#x job=%u generation=%llu\n",
            m.found.magic, static_cast<unsigned long long>(m.found.offset), m.found.length,
            m.found.crc32c, m.found.job, static_cast<unsigned long long>(m.found.generation));
      }
      ok = false;
    }
  }
  if (to_stdout) {
    std::fputs(report.c_str(), stdout);
    if (std::fflush(stdout) != 0) ok = false;
  } else if (!WriteFileAtomically(cl.program.output_path, report)) {
    ok = false;
  }
  return ok ? 0 : kExitJobFailed;
}

}  // namespace
}  // namespace blkgen

int main(int argc, char** argv) { return blkgen::Main(argc, argv); }

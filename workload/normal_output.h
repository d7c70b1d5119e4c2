// The human-readable report, laid out like fio's normal output (banner, per
// job latency and bandwidth lines, "Run status group" summary). Leaves out
// what would make it differ between equal runs: fio's pid and date.
// Thread-safety: pure functions.
#ifndef BLKGEN_NORMAL_OUTPUT_H_
#define BLKGEN_NORMAL_OUTPUT_H_

#include <span>
#include <string>

#include "job_result.h"
#include "options.h"
#include "report.h"

namespace blkgen {

// fio's lines printed before the jobs start ("x: (g=0): rw=...", version,
// "Starting N processes").
std::string FormatBanner(const CommandLine& cl);

// REQUIRES: run.results.size() == cl.jobs.size(), in the same order.
std::string FormatNormalReport(const CommandLine& cl, const RunData& run);

// fio's num2str: `value` with a 1000- or 1024-based prefix so that it fits
// in `max_digits` digits, e.g. (55741, 4, 1000) -> "55.7k". Exposed for tests.
std::string ScaledNumber(double value, int max_digits, int base);

}  // namespace blkgen

#endif  // BLKGEN_NORMAL_OUTPUT_H_

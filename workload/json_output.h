// The JSON report in fio's layout (fio 3.33 --output-format=json), so fio
// tooling can read it: same keys, nesting, units and number types (a key fio
// prints as a float is always a float here, even when integral). blkgen's
// additions sit under "blkgen" keys. Apart from "timestamp", "timestamp_ms"
// and "time" (host wall-clock, passed in), the report is a function of the
// command line and the results: equal results give equal bytes.
// Thread-safety: pure functions.
#ifndef BLKGEN_JSON_OUTPUT_H_
#define BLKGEN_JSON_OUTPUT_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "job_result.h"
#include "options.h"
#include "report.h"

namespace blkgen {

// Wall-clock time of the report, used only for fio's timestamp fields.
struct WallClock {
  int64_t unix_ms = 0;  // ms since the Unix epoch
};

// REQUIRES: run.results.size() == cl.jobs.size(), in the same order; so is
// run.series unless empty.
nlohmann::ordered_json BuildJsonReport(const CommandLine& cl, const RunData& run,
                                       const WallClock& wall);

// The report as text, two-space indented, ending in a newline.
std::string FormatJsonReport(const CommandLine& cl, const RunData& run, const WallClock& wall);

}  // namespace blkgen

#endif  // BLKGEN_JSON_OUTPUT_H_

// Derived numbers of a finished run, computed the way fio computes them, for
// both output formats: report entries (one per job, or with group_reporting
// the jobs fio merges), bandwidth and IOPS per direction, fio's latency and
// I/O depth distributions, group aggregates.
// Units: bytes, KiB (1024 bytes), ns, ms, percent as named.
// Thread-safety: pure functions.
#ifndef BLKGEN_REPORT_H_
#define BLKGEN_REPORT_H_

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "block_device.h"
#include "job_result.h"
#include "job_spec.h"

namespace blkgen {

inline constexpr std::string_view kBlkgenVersion = "blkgen-0.2";
// Version of blkgen's own JSON additions (the "blkgen" objects).
inline constexpr int kJsonSchemaVersion = 2;

// Everything a report is made from, besides the command line.
struct RunData {
  std::span<const JobResult* const> results;         // one per job
  std::vector<std::span<const SeriesPoint>> series;  // per job; may be empty
  std::vector<DiskUtil> disk_util;
};

// fio's bw/iops sample statistics (io_stat), summed over a group's jobs as
// fio does for group_reporting (min, max and mean add up).
struct SampleSummary {
  uint64_t min = 0, max = 0, n = 0;
  double mean = 0, stddev = 0;
};
SampleSummary Summarize(const RunningStat& s);

// One entry of the report: a job, or with group_reporting the jobs fio
// merges into one (a job with group_reporting joins the entry before it).
struct ReportEntry {
  const JobSpec* spec = nullptr;      // the first member's
  const JobResult* result = nullptr;  // the job's own, or `merged`
  std::unique_ptr<JobResult> merged;  // several members: their sum
  std::vector<uint32_t> members;      // job indexes
  std::array<SampleSummary, kNumDirs> bw{}, iops{};
};
std::vector<ReportEntry> BuildReportEntries(std::span<const JobSpec> jobs,
                                            std::span<const JobResult* const> results);

// Adds `src` into `dst` the way fio's sum_thread_stats() does (latencies
// pooled, bytes and counts added, runtime the longest).
void MergeInto(JobResult* dst, const JobResult& src);

struct DirReport {
  uint64_t io_bytes = 0;
  uint64_t io_kbytes = 0;   // io_bytes / 1024
  uint64_t bw_bytes = 0;    // bytes/s over the job's measured runtime
  uint64_t bw_kib = 0;      // KiB/s (fio's "bw")
  double iops = 0;          // I/O per s
  uint64_t runtime_ms = 0;  // nearest ms, >= 1; 0 if the direction did no I/O (as fio)
  uint64_t total_ios = 0;
};

// REQUIRES: runtime_ns is the job's measured runtime (JobResult::runtime_ns).
DirReport SummarizeDir(const DirResult& d, uint64_t runtime_ns);

// fio's "latency_ns" / "latency_us" / "latency_ms" maps: share of all I/Os
// (percent; a non-zero share below 0.01 shows as 0.01) whose clat falls in
// each bin. Computed from the clat histograms: a histogram bucket counts in
// the bin of its representative value, so only latencies within 1/256 of a
// bin edge can land one bin off.
struct LatencyShares {
  static constexpr std::array<std::string_view, 10> kNsKeys = {"2",   "4",   "10",  "20",  "50",
                                                               "100", "250", "500", "750", "1000"};
  static constexpr std::array<std::string_view, 10> kUsKeys = kNsKeys;
  static constexpr std::array<std::string_view, 12> kMsKeys = {
      "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000"};
  std::array<double, 10> ns{};
  std::array<double, 10> us{};
  std::array<double, 12> ms{};
};
LatencyShares ComputeLatencyShares(const JobResult& r);

// fio's iodepth maps: keys and percentages (a non-zero share below 0.1 shows
// as 0.1).
inline constexpr std::array<std::string_view, kDepthBuckets> kDepthKeys = {"1",  "2",  "4",   "8",
                                                                           "16", "32", ">=64"};
inline constexpr std::array<std::string_view, kDepthBuckets> kBatchKeys = {"0",  "4",  "8",   "16",
                                                                           "32", "64", ">=64"};
std::array<double, kDepthBuckets> DepthShares(const uint64_t (&map)[kDepthBuckets]);

// Group-wide numbers (all entries form fio's group 0).
struct GroupReport {
  std::array<uint64_t, kNumDirs> io_bytes{};
  std::array<uint64_t, kNumDirs> agg_bw_bytes{};  // sum of bytes / longest runtime
  std::array<uint64_t, kNumDirs> min_bw_bytes{};  // per-entry bw, over entries with I/O
  std::array<uint64_t, kNumDirs> max_bw_bytes{};
  std::array<uint64_t, kNumDirs> min_run_ms{};
  std::array<uint64_t, kNumDirs> max_run_ms{};
};
GroupReport SummarizeGroup(std::span<const JobResult* const> results);
GroupReport SummarizeGroup(const std::vector<ReportEntry>& entries);

// fio's "bw_agg": an entry's mean sampled bandwidth as a percentage of the
// group's aggregate (capped at 100); 0 without samples.
double BwAggPercent(const SampleSummary& bw_kib, uint64_t group_agg_bw_bytes);

}  // namespace blkgen

#endif  // BLKGEN_REPORT_H_

#include "report.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace blkgen {
namespace {

constexpr uint64_t kNsPerMs = 1000 * 1000;

double Share(uint64_t count, uint64_t total, double floor) {
  if (total == 0 || count == 0) return 0.0;
  const double share = 100.0 * static_cast<double>(count) / static_cast<double>(total);
  return share < floor ? floor : share;
}

// Index of the fio bin of `v` (in the bin's unit): the first upper edge above it.
int BinOf(uint64_t v) {
  static constexpr uint64_t kEdges[] = {2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000};
  int i = 0;
  while (i < 11 && v >= kEdges[i]) ++i;
  return i;
}

}  // namespace

DirReport SummarizeDir(const DirResult& d, uint64_t runtime_ns) {
  DirReport r;
  r.io_bytes = d.io_bytes;
  r.io_kbytes = d.io_bytes / 1024;
  r.total_ios = d.total_ios;
  if (d.total_ios == 0 || runtime_ns == 0) return r;
  // Rounded to the nearest ms, at least 1 so readers can divide by it.
  r.runtime_ms = std::max<uint64_t>(1, (runtime_ns + kNsPerMs / 2) / kNsPerMs);
  r.bw_bytes = static_cast<uint64_t>(static_cast<unsigned __int128>(d.io_bytes) * 1000000000ULL /
                                     runtime_ns);
  r.bw_kib = r.bw_bytes / 1024;
  r.iops = static_cast<double>(d.total_ios) * 1e9 / static_cast<double>(runtime_ns);
  return r;
}

LatencyShares ComputeLatencyShares(const JobResult& r) {
  std::array<uint64_t, 10> ns{}, us{};
  std::array<uint64_t, 12> ms{};
  uint64_t total = 0;
  for (const DirResult& d : r.dir) {
    total += d.total_ios;
    for (int i = 0; i < LatencyHistogram::kNumBuckets; ++i) {
      const uint64_t c = d.clat_hist.CountAt(i);
      if (c == 0) continue;
      const uint64_t v = LatencyHistogram::Representative(i);
      if (v < 1000) {
        ns[BinOf(v)] += c;
      } else if (v < 1000 * 1000) {
        us[BinOf(v / 1000)] += c;
      } else {
        ms[BinOf(v / (1000 * 1000))] += c;
      }
    }
  }
  LatencyShares s;
  for (size_t i = 0; i < ns.size(); ++i) s.ns[i] = Share(ns[i], total, 0.01);
  for (size_t i = 0; i < us.size(); ++i) s.us[i] = Share(us[i], total, 0.01);
  for (size_t i = 0; i < ms.size(); ++i) s.ms[i] = Share(ms[i], total, 0.01);
  return s;
}

std::array<double, kDepthBuckets> DepthShares(const uint64_t (&map)[kDepthBuckets]) {
  uint64_t total = 0;
  for (uint64_t c : map) total += c;
  std::array<double, kDepthBuckets> out{};
  for (int i = 0; i < kDepthBuckets; ++i) out[i] = Share(map[i], total, 0.1);
  return out;
}

SampleSummary Summarize(const RunningStat& s) {
  SampleSummary out;
  if (s.n == 0) return out;
  out.min = s.min;
  out.max = s.max;
  out.n = s.n;
  out.mean = s.Mean();
  out.stddev = s.Stddev();
  return out;
}

namespace {

// fio's sum_stat(..., pure_sum=true) for bw and iops samples: the S terms
// (squared deviations) add, so the deviation is sqrt(sum of S / (n - 1)).
SampleSummary PureSum(const SampleSummary& a, const SampleSummary& b) {
  if (b.n == 0) return a;
  if (a.n == 0) return b;
  SampleSummary out;
  out.min = a.min + b.min;
  out.max = a.max + b.max;
  out.n = a.n + b.n;
  out.mean = a.mean + b.mean;
  const double s_a = a.n > 1 ? a.stddev * a.stddev * static_cast<double>(a.n - 1) : 0;
  const double s_b = b.n > 1 ? b.stddev * b.stddev * static_cast<double>(b.n - 1) : 0;
  out.stddev = out.n > 1 ? std::sqrt((s_a + s_b) / static_cast<double>(out.n - 1)) : 0;
  return out;
}

}  // namespace

void MergeInto(JobResult* dst, const JobResult& src) {
  if (dst->error == 0 && src.error != 0) {
    dst->error = src.error;
    std::memcpy(dst->error_text, src.error_text, sizeof(dst->error_text));
  }
  dst->measured |= src.measured;
  dst->runtime_ns = std::max(dst->runtime_ns, src.runtime_ns);
  dst->elapsed_ns = std::max(dst->elapsed_ns, src.elapsed_ns);
  for (int d = 0; d < kNumDirs; ++d) {
    DirResult& a = dst->dir[d];
    const DirResult& b = src.dir[d];
    a.io_bytes += b.io_bytes;
    a.total_ios += b.total_ios;
    a.short_ios += b.short_ios;
    a.drop_ios += b.drop_ios;
    a.slat_ns.Merge(b.slat_ns);
    a.clat_ns.Merge(b.clat_ns);
    a.lat_ns.Merge(b.lat_ns);
    a.clat_hist.Merge(b.clat_hist);
    a.lat_hist.Merge(b.lat_hist);
  }
  dst->usr_ns += src.usr_ns;
  dst->sys_ns += src.sys_ns;
  dst->ctx += src.ctx;
  dst->ctx_involuntary += src.ctx_involuntary;
  dst->majf += src.majf;
  dst->minf += src.minf;
  for (int i = 0; i < kDepthBuckets; ++i) {
    dst->depth_map[i] += src.depth_map[i];
    dst->submit_map[i] += src.submit_map[i];
    dst->complete_map[i] += src.complete_map[i];
  }
  dst->sync.total_ios += src.sync.total_ios;
  dst->sync.lat_ns.Merge(src.sync.lat_ns);
  dst->sync.lat_hist.Merge(src.sync.lat_hist);
  VerifyResult& v = dst->verify;
  v.checked += src.verify.checked;
  v.mismatches += src.verify.mismatches;
  v.unchecked += src.verify.unchecked;
  v.verify_reads += src.verify.verify_reads;
  v.trimmed_checked += src.verify.trimmed_checked;
  v.trimmed_zeros += src.verify.trimmed_zeros;
  v.trimmed_ones += src.verify.trimmed_ones;
  v.trimmed_unchanged += src.verify.trimmed_unchanged;
  v.verify_phase_ns = std::max(v.verify_phase_ns, src.verify.verify_phase_ns);
  for (uint32_t i = 0; i < src.verify.recorded && v.recorded < kMaxVerifyMismatches; ++i) {
    v.first[v.recorded++] = src.verify.first[i];
  }
}

std::vector<ReportEntry> BuildReportEntries(std::span<const JobSpec> jobs,
                                            std::span<const JobResult* const> results) {
  std::vector<ReportEntry> entries;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const JobResult& r = *results[i];
    if (entries.empty() || !jobs[i].group_reporting) {
      ReportEntry e;
      e.spec = &jobs[i];
      e.result = &r;
      e.members.push_back(static_cast<uint32_t>(i));
      for (int d = 0; d < kNumDirs; ++d) {
        e.bw[d] = Summarize(r.dir[d].bw_kib_s);
        e.iops[d] = Summarize(r.dir[d].iops);
      }
      entries.push_back(std::move(e));
      continue;
    }
    ReportEntry& e = entries.back();
    if (!e.merged) {
      e.merged = std::make_unique<JobResult>(*e.result);
      e.result = e.merged.get();
    }
    MergeInto(e.merged.get(), r);
    e.members.push_back(static_cast<uint32_t>(i));
    for (int d = 0; d < kNumDirs; ++d) {
      e.bw[d] = PureSum(e.bw[d], Summarize(r.dir[d].bw_kib_s));
      e.iops[d] = PureSum(e.iops[d], Summarize(r.dir[d].iops));
    }
  }
  return entries;
}

GroupReport SummarizeGroup(const std::vector<ReportEntry>& entries) {
  std::vector<const JobResult*> results;
  for (const ReportEntry& e : entries) results.push_back(e.result);
  return SummarizeGroup(results);
}

GroupReport SummarizeGroup(std::span<const JobResult* const> results) {
  GroupReport g;
  for (int d = 0; d < kNumDirs; ++d) {
    uint64_t max_runtime_ns = 0;
    bool any = false;
    for (const JobResult* r : results) {
      const DirReport dr = SummarizeDir(r->dir[d], r->runtime_ns);
      if (dr.total_ios == 0) continue;
      g.io_bytes[d] += dr.io_bytes;
      max_runtime_ns = std::max(max_runtime_ns, r->runtime_ns);
      g.min_bw_bytes[d] = any ? std::min(g.min_bw_bytes[d], dr.bw_bytes) : dr.bw_bytes;
      g.max_bw_bytes[d] = any ? std::max(g.max_bw_bytes[d], dr.bw_bytes) : dr.bw_bytes;
      g.min_run_ms[d] = any ? std::min(g.min_run_ms[d], dr.runtime_ms) : dr.runtime_ms;
      g.max_run_ms[d] = any ? std::max(g.max_run_ms[d], dr.runtime_ms) : dr.runtime_ms;
      any = true;
    }
    if (max_runtime_ns != 0) {
      g.agg_bw_bytes[d] = static_cast<uint64_t>(static_cast<unsigned __int128>(g.io_bytes[d]) *
                                                1000000000ULL / max_runtime_ns);
    }
  }
  return g;
}

double BwAggPercent(const SampleSummary& bw_kib, uint64_t group_agg_bw_bytes) {
  const uint64_t agg_kib = group_agg_bw_bytes / 1024;
  if (bw_kib.n == 0 || agg_kib == 0) return 0.0;
  return std::min(100.0, bw_kib.mean * 100.0 / static_cast<double>(agg_kib));
}

}  // namespace blkgen

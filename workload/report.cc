#include "report.h"

#include <algorithm>

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

double BwAggPercent(const DirResult& d, uint64_t group_agg_bw_bytes) {
  const uint64_t agg_kib = group_agg_bw_bytes / 1024;
  if (d.bw_kib_s.n == 0 || agg_kib == 0) return 0.0;
  return std::min(100.0, d.bw_kib_s.Mean() * 100.0 / static_cast<double>(agg_kib));
}

}  // namespace blkgen

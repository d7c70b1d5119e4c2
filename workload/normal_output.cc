#include "normal_output.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>

#include "report.h"

namespace blkgen {
namespace {

void Appendf(std::string* out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void Appendf(std::string* out, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  const int n = std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (n > 0) out->append(buf, std::min<size_t>(static_cast<size_t>(n), sizeof(buf) - 1));
}

std::string BlockSize(uint64_t bytes) {
  char buf[32];
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) == 0) {
    std::snprintf(buf, sizeof(buf), "%.1fMiB", bytes / (1024.0 * 1024.0));
  } else if (bytes >= 1024 && bytes % 1024 == 0 && bytes != 4096) {
    std::snprintf(buf, sizeof(buf), "%.1fKiB", bytes / 1024.0);
  } else {
    std::snprintf(buf, sizeof(buf), "%lluB", static_cast<unsigned long long>(bytes));
  }
  return buf;
}

// fio's display_lat(): unit chosen from min and mean.
void LatencyLine(std::string* out, const char* name, const RunningStat& s) {
  if (s.n == 0) return;
  double div = 1;
  const char* unit = "nsec";
  const double mean = s.Mean();
  if (s.min > 1000000 && mean > 1000000) {
    div = 1e6;
    unit = "msec";
  } else if (s.min > 1000 && mean > 1000) {
    div = 1e3;
    unit = "usec";
  }
  Appendf(out, "    %s (%s): min=%s, max=%s, avg=%5.02f, stdev=%5.02f\n", name, unit,
          ScaledNumber(std::floor(s.min / div), 6, 1000).c_str(),
          ScaledNumber(std::floor(s.max / div), 6, 1000).c_str(), mean / div, s.Stddev() / div);
}

// fio's show_clat_percentiles().
void PercentileLines(std::string* out, const char* name, const LatencyHistogram& hist,
                     const RunningStat& s, const std::vector<double>& percentiles) {
  if (s.n == 0 || percentiles.empty()) return;
  std::vector<uint64_t> v = hist.Percentiles(percentiles, s.min, s.max);
  const uint64_t minv = *std::min_element(v.begin(), v.end());
  const uint64_t maxv = *std::max_element(v.begin(), v.end());
  int scale_down = 0;
  uint64_t divisor = 1;
  const char* unit = "nsec";
  if (minv > 2000000 && maxv > 99999999ULL) {
    scale_down = 2;
    divisor = 1000000;
    unit = "msec";
  } else if (minv > 2000 && maxv > 99999) {
    scale_down = 1;
    divisor = 1000;
    unit = "usec";
  }
  const int width =
      std::max(5, static_cast<int>(std::log10(static_cast<double>(maxv / divisor)) + 1));
  Appendf(out, "    %s percentiles (%s):\n     |", name, unit);
  for (size_t j = 0; j < v.size(); ++j) {
    if (j != 0 && j % 4 == 0) out->append("     |");
    for (int i = 0; i < scale_down; ++i) v[j] = (v[j] + 999) / 1000;
    const bool last = j + 1 == v.size();
    Appendf(out, " %5.2fth=[%*llu]%c", percentiles[j], width, static_cast<unsigned long long>(v[j]),
            last ? '\n' : ',');
    if (!last && j % 4 == 3) out->append("\n");
  }
}

void SampleLines(std::string* out, const SampleSummary& bw, const SampleSummary& iops,
                 uint64_t agg_bw_bytes) {
  if (bw.n == 0) return;
  Appendf(out,
          "   bw (  KiB/s): min=%llu, max=%llu, per=%3.2f%%, avg=%5.02f, stdev=%5.02f, "
          "samples=%llu\n",
          static_cast<unsigned long long>(bw.min), static_cast<unsigned long long>(bw.max),
          BwAggPercent(bw, agg_bw_bytes), bw.mean, bw.stddev,
          static_cast<unsigned long long>(bw.n));
  Appendf(out, "   iops        : min=%llu, max=%llu, avg=%5.02f, stdev=%5.02f, samples=%llu\n",
          static_cast<unsigned long long>(iops.min), static_cast<unsigned long long>(iops.max),
          iops.mean, iops.stddev, static_cast<unsigned long long>(iops.n));
}

template <size_t N>
void ShareLines(std::string* out, const char* unit, const std::array<std::string_view, N>& keys,
                const std::array<double, N>& shares) {
  int on_line = 0;
  for (size_t i = 0; i < N; ++i) {
    if (shares[i] <= 0) continue;
    if (on_line == 0) Appendf(out, "  lat (%s)   : ", unit);
    Appendf(out, "%s%.*s=%3.2f%%", on_line ? ", " : "", int(keys[i].size()), keys[i].data(),
            shares[i]);
    if (++on_line == 5) {
      out->append("\n");
      on_line = 0;
    }
  }
  if (on_line) out->append("\n");
}

void DistributionLine(std::string* out, const char* label,
                      const std::array<std::string_view, kDepthBuckets>& keys,
                      const uint64_t (&map)[kDepthBuckets]) {
  const std::array<double, kDepthBuckets> s = DepthShares(map);
  out->append(label);
  for (int i = 0; i < kDepthBuckets; ++i) {
    Appendf(out, "%s%.*s=%3.1f%%", i ? ", " : "", int(keys[i].size()), keys[i].data(), s[i]);
  }
  out->append("\n");
}

std::string Iec(uint64_t bytes_per_s) {
  return ScaledNumber(static_cast<double>(bytes_per_s), 4, 1024) + "B/s";
}
std::string Si(uint64_t bytes_per_s) {
  return ScaledNumber(static_cast<double>(bytes_per_s), 4, 1000) + "B/s";
}
std::string Bandwidth(uint64_t bytes_per_s) {
  return Iec(bytes_per_s) + " (" + Si(bytes_per_s) + ")";
}

}  // namespace

std::string ScaledNumber(double value, int max_digits, int base) {
  static constexpr const char* kSi[] = {"", "k", "M", "G", "T", "P", "E"};
  static constexpr const char* kIec[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  const double limit = std::pow(10.0, max_digits);
  int prefix = 0;
  while (std::round(value) >= limit && prefix < 6) {
    value /= base;
    ++prefix;
  }
  const char* p = base == 1024 ? kIec[prefix] : kSi[prefix];
  char buf[64];
  if (prefix == 0) {
    std::snprintf(buf, sizeof(buf), "%.0f%s", value, p);
  } else {
    const int int_digits = value < 1 ? 1 : static_cast<int>(std::log10(value)) + 1;
    const int decimals = std::max(0, max_digits - int_digits - 1);
    std::snprintf(buf, sizeof(buf), "%.*f%s", decimals, value, p);
  }
  return buf;
}

std::string FormatBanner(const CommandLine& cl) {
  std::string out;
  for (const JobSpec& job : cl.jobs) {
    if (job.clone > 0) {  // fio prints "..." once for a job's clones
      if (job.clone == 1) out.append("...\n");
      continue;
    }
    Appendf(&out,
            "%s: (g=0): rw=%.*s, bs=(R) %s-%s, (W) %s-%s, (T) %s-%s, ioengine=%.*s, "
            "iodepth=%u\n",
            job.name.c_str(), int(InfoFor(job.rw).name.size()), InfoFor(job.rw).name.data(),
            BlockSize(job.bs[0]).c_str(), BlockSize(job.bs[0]).c_str(),
            BlockSize(job.bs[1]).c_str(), BlockSize(job.bs[1]).c_str(),
            BlockSize(job.bs[2]).c_str(), BlockSize(job.bs[2]).c_str(),
            int(NameOf(job.ioengine).size()), NameOf(job.ioengine).data(), job.iodepth);
  }
  out.append(kBlkgenVersion);
  Appendf(&out, "\nStarting %zu process%s\n", cl.jobs.size(), cl.jobs.size() == 1 ? "" : "es");
  return out;
}

std::string FormatNormalReport(const CommandLine& cl, const RunData& run) {
  const std::vector<ReportEntry> entries = BuildReportEntries(cl.jobs, run.results);
  const GroupReport group = SummarizeGroup(entries);
  std::string out;
  for (const ReportEntry& e : entries) {
    const JobSpec& job = *e.spec;
    const JobResult& r = *e.result;
    Appendf(&out, "\n%s: (groupid=0, jobs=%zu): err=%2d\n", job.name.c_str(), e.members.size(),
            r.error);
    if (r.error != 0) Appendf(&out, "  error: %s\n", r.error_text);
    for (int d = 0; d < kNumDirs; ++d) {
      const DirResult& dr = r.dir[d];
      const DirReport rep = SummarizeDir(dr, r.runtime_ns);
      if (rep.total_ios == 0) continue;
      Appendf(&out, "  %.*s: IOPS=%s, BW=%s(%sB/%llumsec)\n", int(kDirNames[d].size()),
              kDirNames[d].data(), ScaledNumber(rep.iops, 4, 1000).c_str(),
              Bandwidth(rep.bw_bytes).c_str(),
              ScaledNumber(static_cast<double>(rep.io_bytes), 4, 1024).c_str(),
              static_cast<unsigned long long>(rep.runtime_ms));
      LatencyLine(&out, "slat", dr.slat_ns);
      LatencyLine(&out, "clat", dr.clat_ns);
      LatencyLine(&out, " lat", dr.lat_ns);
      PercentileLines(&out, "clat", dr.clat_hist, dr.clat_ns, job.percentiles);
      SampleLines(&out, e.bw[d], e.iops[d], group.agg_bw_bytes[d]);
    }
    if (r.sync.total_ios > 0) {
      out.append("  fsync/fdatasync/sync_file_range:\n");
      LatencyLine(&out, "sync", r.sync.lat_ns);
      PercentileLines(&out, "sync", r.sync.lat_hist, r.sync.lat_ns, job.percentiles);
    }
    if (job.verify != VerifyKind::kNone) {
      Appendf(&out, "  verify       : checked=%llu, mismatches=%llu, unchecked=%llu\n",
              static_cast<unsigned long long>(r.verify.checked),
              static_cast<unsigned long long>(r.verify.mismatches),
              static_cast<unsigned long long>(r.verify.unchecked));
      if (r.verify.trimmed_checked > 0) {
        Appendf(&out, "  trimmed read : checked=%llu, zeros=%llu, ones=%llu, unchanged=%llu\n",
                static_cast<unsigned long long>(r.verify.trimmed_checked),
                static_cast<unsigned long long>(r.verify.trimmed_zeros),
                static_cast<unsigned long long>(r.verify.trimmed_ones),
                static_cast<unsigned long long>(r.verify.trimmed_unchanged));
      }
    }
    const LatencyShares lat = ComputeLatencyShares(r);
    ShareLines(&out, "nsec", LatencyShares::kNsKeys, lat.ns);
    ShareLines(&out, "usec", LatencyShares::kUsKeys, lat.us);
    ShareLines(&out, "msec", LatencyShares::kMsKeys, lat.ms);
    const double runtime = static_cast<double>(r.runtime_ns);
    Appendf(&out, "  cpu          : usr=%3.2f%%, sys=%3.2f%%, ctx=%llu, majf=%llu, minf=%llu\n",
            runtime > 0 ? 100.0 * r.usr_ns / runtime : 0.0,
            runtime > 0 ? 100.0 * r.sys_ns / runtime : 0.0, static_cast<unsigned long long>(r.ctx),
            static_cast<unsigned long long>(r.majf), static_cast<unsigned long long>(r.minf));
    DistributionLine(&out, "  IO depths    : ", kDepthKeys, r.depth_map);
    DistributionLine(&out, "     submit    : ", kBatchKeys, r.submit_map);
    DistributionLine(&out, "     complete  : ", kBatchKeys, r.complete_map);
    Appendf(&out,
            "     issued rwts: total=%llu,%llu,%llu,%llu short=%llu,%llu,%llu,0 "
            "dropped=0,0,0,0\n",
            static_cast<unsigned long long>(r.dir[0].total_ios),
            static_cast<unsigned long long>(r.dir[1].total_ios),
            static_cast<unsigned long long>(r.dir[2].total_ios),
            static_cast<unsigned long long>(r.sync.total_ios),
            static_cast<unsigned long long>(r.dir[0].short_ios),
            static_cast<unsigned long long>(r.dir[1].short_ios),
            static_cast<unsigned long long>(r.dir[2].short_ios));
    Appendf(&out, "     latency   : target=0, window=0, percentile=100.00%%, depth=%u\n",
            r.iodepth);
  }
  out.append("\nRun status group 0 (all jobs):\n");
  static constexpr const char* kUpper[] = {"READ", "WRITE", "TRIM"};
  for (int d = 0; d < kNumDirs; ++d) {
    if (group.io_bytes[d] == 0) continue;
    Appendf(&out, "  %5s: bw=%s, %s-%s (%s-%s), io=%sB (%sB), run=%llu-%llumsec\n", kUpper[d],
            Bandwidth(group.agg_bw_bytes[d]).c_str(), Iec(group.min_bw_bytes[d]).c_str(),
            Iec(group.max_bw_bytes[d]).c_str(), Si(group.min_bw_bytes[d]).c_str(),
            Si(group.max_bw_bytes[d]).c_str(),
            ScaledNumber(static_cast<double>(group.io_bytes[d]), 4, 1024).c_str(),
            ScaledNumber(static_cast<double>(group.io_bytes[d]), 4, 1000).c_str(),
            static_cast<unsigned long long>(group.min_run_ms[d]),
            static_cast<unsigned long long>(group.max_run_ms[d]));
  }
  if (!run.disk_util.empty()) {
    out.append("\nDisk stats (read/write):\n");
    for (const DiskUtil& u : run.disk_util) {
      Appendf(&out,
              "  %s: ios=%llu/%llu, merge=%llu/%llu, ticks=%llu/%llu, in_queue=%llu, "
              "util=%3.2f%%\n",
              u.name.c_str(), static_cast<unsigned long long>(u.read_ios),
              static_cast<unsigned long long>(u.write_ios),
              static_cast<unsigned long long>(u.read_merges),
              static_cast<unsigned long long>(u.write_merges),
              static_cast<unsigned long long>(u.read_ticks),
              static_cast<unsigned long long>(u.write_ticks),
              static_cast<unsigned long long>(u.in_queue), u.util);
    }
  }
  return out;
}

}  // namespace blkgen

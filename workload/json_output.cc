#include "json_output.h"

#include <time.h>

#include <cstdio>

#include "histogram.h"
#include "report.h"

namespace blkgen {
namespace {

using Json = nlohmann::ordered_json;

// fio's percentile key: printf("%f").
std::string PercentileKey(double p) {
  char key[32];
  std::snprintf(key, sizeof(key), "%f", p);
  return key;
}

Json StatJson(const RunningStat& s) {
  Json j;
  j["min"] = s.n ? s.min : 0;
  j["max"] = s.n ? s.max : 0;
  j["mean"] = s.Mean();
  j["stddev"] = s.Stddev();
  j["N"] = s.n;
  return j;
}

Json LatencyJson(const RunningStat& s, const LatencyHistogram& hist,
                 const std::vector<double>& percentiles) {
  Json j = StatJson(s);
  if (s.n == 0) return j;  // fio leaves "percentile" out when there are no samples
  const std::vector<uint64_t> values = hist.Percentiles(percentiles, s.min, s.max);
  Json p = Json::object();
  for (size_t i = 0; i < percentiles.size(); ++i) p[PercentileKey(percentiles[i])] = values[i];
  j["percentile"] = std::move(p);
  return j;
}

Json DirJson(const DirResult& d, uint64_t runtime_ns, uint64_t group_agg_bw_bytes,
             const JobSpec& spec) {
  const DirReport r = SummarizeDir(d, runtime_ns);
  Json j;
  j["io_bytes"] = r.io_bytes;
  j["io_kbytes"] = r.io_kbytes;
  j["bw_bytes"] = r.bw_bytes;
  j["bw"] = r.bw_kib;
  j["iops"] = r.iops;
  j["runtime"] = r.runtime_ms;
  j["total_ios"] = d.total_ios;
  j["short_ios"] = d.short_ios;
  j["drop_ios"] = d.drop_ios;
  j["slat_ns"] = StatJson(d.slat_ns);
  j["clat_ns"] = LatencyJson(d.clat_ns, d.clat_hist, spec.percentiles);
  j["lat_ns"] = LatencyJson(d.lat_ns, d.lat_hist, spec.percentiles);
  j["bw_min"] = d.bw_kib_s.n ? d.bw_kib_s.min : 0;
  j["bw_max"] = d.bw_kib_s.n ? d.bw_kib_s.max : 0;
  j["bw_agg"] = BwAggPercent(d, group_agg_bw_bytes);
  j["bw_mean"] = d.bw_kib_s.Mean();
  j["bw_dev"] = d.bw_kib_s.Stddev();
  j["bw_samples"] = d.bw_kib_s.n;
  j["iops_min"] = d.iops.n ? d.iops.min : 0;
  j["iops_max"] = d.iops.n ? d.iops.max : 0;
  j["iops_mean"] = d.iops.Mean();
  j["iops_stddev"] = d.iops.Stddev();
  j["iops_samples"] = d.iops.n;
  return j;
}

template <size_t N>
Json SharesJson(const std::array<std::string_view, N>& keys, const std::array<double, N>& v) {
  Json j = Json::object();
  for (size_t i = 0; i < N; ++i) j[std::string(keys[i])] = v[i];
  return j;
}

Json HistogramBuckets(const LatencyHistogram& h) {
  Json list = Json::array();
  for (int i = 0; i < LatencyHistogram::kNumBuckets; ++i) {
    const uint64_t c = h.CountAt(i);
    if (c == 0) continue;
    const uint64_t lo = LatencyHistogram::LowerBound(i);
    list.push_back(Json::array({lo, lo + LatencyHistogram::Width(i) - 1, c}));
  }
  return list;
}

Json BlkgenJobJson(const JobSpec& spec, const JobResult& r, uint32_t job_index) {
  Json j;
  j["job_index"] = job_index;
  j["iodepth"] = r.iodepth;  // as run (sync engines: 1)
  j["engine_setup_flags"] = r.engine_flags;
  j["measured"] = r.measured;
  j["runtime_ns"] = r.runtime_ns;
  j["elapsed_ns"] = r.elapsed_ns;
  j["usr_ns"] = r.usr_ns;
  j["sys_ns"] = r.sys_ns;
  j["error_text"] = std::string(r.error_text);
  // The job as run: every setting, defaults and global options applied.
  Json settings;
  settings["filename"] = spec.EffectiveFilename();
  settings["rw"] = std::string(InfoFor(spec.rw).name);
  settings["bs"] = Json::array({spec.bs[0], spec.bs[1], spec.bs[2]});
  settings["region_offset"] = r.region_offset;
  settings["region_bytes"] = r.region_bytes;
  settings["iodepth"] = spec.iodepth;
  settings["runtime_ns"] = spec.runtime_ns;
  settings["time_based"] = spec.time_based;
  settings["ramp_time_ns"] = spec.ramp_ns;
  settings["direct"] = spec.direct;
  settings["ioengine"] = std::string(NameOf(spec.ioengine));
  settings["randseed"] = spec.randseed;
  j["settings"] = std::move(settings);
  Json hist;
  hist["sub_bucket_bits"] = LatencyHistogram::kSubBucketBits;
  hist["relative_error"] = LatencyHistogram::kRelativeErrorBound;
  hist["bucket_format"] = Json::array({"min_ns", "max_ns", "count"});
  for (int d = 0; d < kNumDirs; ++d) {
    Json dir;
    dir["clat_ns"] = HistogramBuckets(r.dir[d].clat_hist);
    dir["lat_ns"] = HistogramBuckets(r.dir[d].lat_hist);
    hist[std::string(kDirNames[d])] = std::move(dir);
  }
  j["histogram"] = std::move(hist);
  return j;
}

Json OptionsJson(const std::vector<GivenOption>& given) {
  Json j = Json::object();
  for (const GivenOption& g : given) {
    if (g.second) j[g.first] = *g.second;  // fio leaves out flags given without a value
  }
  return j;
}

Json JobJson(const JobSpec& spec, const JobResult& r, uint32_t job_index,
             const GroupReport& group) {
  Json j;
  j["jobname"] = spec.name;
  j["groupid"] = 0;
  j["error"] = r.error;
  j["eta"] = 0;
  j["elapsed"] = (r.elapsed_ns + 999999999ULL) / 1000000000ULL;  // s, rounded up
  j["job options"] = OptionsJson(spec.given);
  for (int d = 0; d < kNumDirs; ++d) {
    j[std::string(kDirNames[d])] = DirJson(r.dir[d], r.runtime_ns, group.agg_bw_bytes[d], spec);
  }
  Json sync;
  sync["total_ios"] = 0;
  sync["lat_ns"] = StatJson(RunningStat{});
  j["sync"] = std::move(sync);
  j["job_runtime"] = (r.runtime_ns + 500000) / 1000000;  // ms
  const double runtime = static_cast<double>(r.runtime_ns);
  j["usr_cpu"] = runtime > 0 ? 100.0 * static_cast<double>(r.usr_ns) / runtime : 0.0;
  j["sys_cpu"] = runtime > 0 ? 100.0 * static_cast<double>(r.sys_ns) / runtime : 0.0;
  j["ctx"] = r.ctx;
  j["majf"] = r.majf;
  j["minf"] = r.minf;
  j["iodepth_level"] = SharesJson(kDepthKeys, DepthShares(r.depth_map));
  j["iodepth_submit"] = SharesJson(kBatchKeys, DepthShares(r.submit_map));
  j["iodepth_complete"] = SharesJson(kBatchKeys, DepthShares(r.complete_map));
  const LatencyShares lat = ComputeLatencyShares(r);
  j["latency_ns"] = SharesJson(LatencyShares::kNsKeys, lat.ns);
  j["latency_us"] = SharesJson(LatencyShares::kUsKeys, lat.us);
  j["latency_ms"] = SharesJson(LatencyShares::kMsKeys, lat.ms);
  j["latency_depth"] = r.iodepth;
  j["latency_target"] = 0;
  j["latency_percentile"] = 100.0;
  j["latency_window"] = 0;
  j["blkgen"] = BlkgenJobJson(spec, r, job_index);
  return j;
}

}  // namespace

Json BuildJsonReport(const CommandLine& cl, std::span<const JobResult* const> results,
                     const WallClock& wall) {
  Json top;
  top["fio version"] = std::string(kBlkgenVersion);
  // Host wall-clock: these three fields only.
  const time_t secs = static_cast<time_t>(wall.unix_ms / 1000);
  top["timestamp"] = static_cast<int64_t>(secs);
  top["timestamp_ms"] = wall.unix_ms;
  char when[64] = "";
  tm local;
  if (localtime_r(&secs, &local) != nullptr) {
    strftime(when, sizeof(when), "%a %b %e %H:%M:%S %Y", &local);
  }
  top["time"] = std::string(when);
  if (!cl.global_options.empty()) top["global options"] = OptionsJson(cl.global_options);
  const GroupReport group = SummarizeGroup(results);
  Json jobs = Json::array();
  for (size_t i = 0; i < cl.jobs.size(); ++i) {
    jobs.push_back(JobJson(cl.jobs[i], *results[i], static_cast<uint32_t>(i), group));
  }
  top["jobs"] = std::move(jobs);
  top["disk_util"] = Json::array();
  Json extra;
  extra["schema_version"] = kJsonSchemaVersion;
  top["blkgen"] = std::move(extra);
  return top;
}

std::string FormatJsonReport(const CommandLine& cl, std::span<const JobResult* const> results,
                             const WallClock& wall) {
  return BuildJsonReport(cl, results, wall).dump(2) + "\n";
}

}  // namespace blkgen

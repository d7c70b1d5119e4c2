#include "json_output.h"

#include <time.h>

#include <cstdio>

#include "cgroup.h"
#include "histogram.h"
#include "replay.h"
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
  if (s.n == 0 || percentiles.empty()) return j;  // fio: no "percentile" without samples
  const std::vector<uint64_t> values = hist.Percentiles(percentiles, s.min, s.max);
  Json p = Json::object();
  for (size_t i = 0; i < percentiles.size(); ++i) p[PercentileKey(percentiles[i])] = values[i];
  j["percentile"] = std::move(p);
  return j;
}

Json DirJson(const DirResult& d, const SampleSummary& bw, const SampleSummary& iops,
             uint64_t runtime_ns, uint64_t group_agg_bw_bytes, const JobSpec& spec) {
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
  j["bw_min"] = bw.min;
  j["bw_max"] = bw.max;
  j["bw_agg"] = BwAggPercent(bw, group_agg_bw_bytes);
  j["bw_mean"] = bw.mean;
  j["bw_dev"] = bw.stddev;
  j["bw_samples"] = bw.n;
  j["iops_min"] = iops.min;
  j["iops_max"] = iops.max;
  j["iops_mean"] = iops.mean;
  j["iops_stddev"] = iops.stddev;
  j["iops_samples"] = iops.n;
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

Json PerDir(const std::array<uint64_t, kNumDirs>& v) { return Json::array({v[0], v[1], v[2]}); }

Json SettingsJson(const JobSpec& spec, const JobResult& r) {
  Json s;
  s["filename"] = spec.EffectiveFilename();
  s["rw"] = std::string(InfoFor(spec.rw).name);
  s["rwmixread"] = spec.rwmixread;
  s["bs"] = PerDir(spec.bs);
  Json split = Json::array();
  for (const auto& dir : spec.bssplit) {
    Json entries = Json::array();
    for (const BsSplitEntry& e : dir) entries.push_back(Json::array({e.bytes, e.percent}));
    split.push_back(std::move(entries));
  }
  s["bssplit"] = std::move(split);
  s["blockalign"] = Json::array(
      {spec.Alignment(Dir::kRead), spec.Alignment(Dir::kWrite), spec.Alignment(Dir::kTrim)});
  s["region_offset"] = r.region_offset;
  s["region_bytes"] = r.region_bytes;
  s["numjobs"] = spec.numjobs;
  s["clone"] = spec.clone;
  s["iodepth"] = spec.iodepth;
  s["iodepth_batch_submit"] = spec.iodepth_batch_submit;
  s["iodepth_batch_complete_min"] = spec.iodepth_batch_complete_min;
  s["iodepth_batch_complete_max"] = spec.iodepth_batch_complete_max;
  s["runtime_ns"] = spec.runtime_ns;
  s["time_based"] = spec.time_based;
  s["ramp_time_ns"] = spec.ramp_ns;
  s["startdelay_ns"] = r.startdelay_ns;
  s["direct"] = spec.direct;
  s["ioengine"] = std::string(NameOf(spec.ioengine));
  s["sqthread_poll"] = spec.sqthread_poll;
  s["fixedbufs"] = spec.fixedbufs;
  s["rate"] = PerDir(spec.rate);
  s["rate_iops"] = PerDir(spec.rate_iops);
  s["thinktime_ns"] = spec.thinktime_ns;
  s["thinktime_blocks"] = spec.thinktime_blocks;
  s["fsync"] = spec.fsync_blocks;
  s["fdatasync"] = spec.fdatasync_blocks;
  s["end_fsync"] = spec.end_fsync;
  s["random_distribution"] = spec.distribution.text.empty() ? "random" : spec.distribution.text;
  s["random_map"] = !spec.norandommap;
  s["randseed"] = r.randseed;
  s["prioclass"] = spec.prioclass ? Json(*spec.prioclass) : Json(nullptr);
  s["prio"] = spec.prio ? Json(*spec.prio) : Json(nullptr);
  s["verify"] = spec.verify == VerifyKind::kCrc32c ? "crc32c" : "0";
  s["do_verify"] = spec.do_verify;
  s["verify_only"] = spec.verify_only;
  s["trim_percentage"] = spec.trim_percentage;
  s["trim_backlog"] = spec.trim_backlog;
  s["trim_backlog_batch"] =
      spec.trim_backlog_batch != 0 ? spec.trim_backlog_batch : spec.trim_backlog;
  s["trim_verify_zero"] = spec.trim_verify_zero;
  s["io_size"] = spec.io_size;
  s["log_interval_ns"] = spec.log_interval_ns;
  return s;
}

Json SeriesJson(const JobSpec& spec, const JobResult& r, std::span<const SeriesPoint> points) {
  Json j;
  j["interval_ns"] = spec.log_interval_ns;
  j["latency"] = "clat";
  j["truncated"] = r.series_truncated;
  const size_t n = std::min<size_t>(r.series_points, points.size());
  Json t = Json::array();
  for (size_t i = 0; i < n; ++i) t.push_back(points[i].end_ns);
  j["end_ns"] = std::move(t);
  for (int d = 0; d < kNumDirs; ++d) {
    if (!spec.Issues(static_cast<Dir>(d))) continue;
    Json iops = Json::array(), bw = Json::array(), p50 = Json::array(), p99 = Json::array();
    uint64_t prev_end = 0;
    for (size_t i = 0; i < n; ++i) {
      const SeriesPoint& p = points[i];
      const uint64_t len = p.end_ns - prev_end;
      prev_end = p.end_ns;
      const double secs = len > 0 ? static_cast<double>(len) / 1e9 : 1.0;
      iops.push_back(static_cast<double>(p.ios[d]) / secs);
      bw.push_back(static_cast<uint64_t>(static_cast<double>(p.bytes[d]) / secs));
      p50.push_back(p.clat_p50_ns[d]);
      p99.push_back(p.clat_p99_ns[d]);
    }
    Json dir;
    dir["iops"] = std::move(iops);
    dir["bw_bytes"] = std::move(bw);
    dir["clat_p50_ns"] = std::move(p50);
    dir["clat_p99_ns"] = std::move(p99);
    j[std::string(kDirNames[d])] = std::move(dir);
  }
  return j;
}

Json IdentityJson(const BlockIdentity& b, bool writer) {
  Json j;
  j["magic"] = b.magic;
  j["crc32c"] = b.crc32c;
  j["offset"] = b.offset;
  j["length"] = b.length;
  j["job"] = writer ? Json(b.job) : Json(nullptr);
  j["generation"] = writer ? Json(b.generation) : Json(nullptr);
  return j;
}

Json ReplayJson(const JobSpec& spec, const ReplayResult& r) {
  Json j;
  j["read_iolog"] = spec.read_iolog;
  j["format"] = spec.replay->format;
  j["trace_ios"] = spec.replay->ios.size();
  j["replay_time_scale"] = spec.replay_time_scale;
  j["replay_no_stall"] = spec.replay_no_stall;
  j["replay_align"] = spec.replay_align;
  j["replay_scale"] = spec.replay_scale;
  j["ios"] = r.ios;
  j["late_max_ns"] = r.late_max_ns;
  j["late_mean_ns"] = r.ios != 0 ? r.late_sum_ns / r.ios : 0;
  j["late_over_100us"] = r.late_over_100us;
  return j;
}

Json VerifyJson(const JobSpec& spec, const VerifyResult& v) {
  Json j;
  j["mode"] = spec.verify == VerifyKind::kCrc32c ? "crc32c" : "0";
  j["checked"] = v.checked;
  j["mismatches"] = v.mismatches;
  j["unchecked"] = v.unchecked;
  j["verify_phase_reads"] = v.verify_reads;
  j["verify_phase_ns"] = v.verify_phase_ns;
  Json trimmed;
  trimmed["checked"] = v.trimmed_checked;
  trimmed["zeros"] = v.trimmed_zeros;
  trimmed["ones"] = v.trimmed_ones;
  trimmed["unchanged"] = v.trimmed_unchanged;
  j["trimmed"] = std::move(trimmed);
  Json list = Json::array();
  for (uint32_t i = 0; i < v.recorded; ++i) {
    const VerifyMismatch& m = v.first[i];
    Json e;
    e["offset"] = m.offset;
    e["trimmed"] = m.trimmed;
    e["expected"] = IdentityJson(m.expected, m.writer_checked);
    e["found"] = IdentityJson(m.found, true);
    list.push_back(std::move(e));
  }
  j["first_mismatches"] = std::move(list);
  return j;
}

Json BlkgenJobJson(const ReportEntry& e, const CommandLine& cl, const RunData& run) {
  const JobSpec& spec = *e.spec;
  const JobResult& r = *e.result;
  Json j;
  j["job_index"] = e.members[0];
  j["members"] = e.members;
  j["failed"] = r.error != 0;
  j["iodepth"] = r.iodepth;  // as run (sync engines: 1)
  j["engine_setup_flags"] = r.engine_flags;
  j["measured"] = r.measured;
  j["runtime_ns"] = r.runtime_ns;
  j["elapsed_ns"] = r.elapsed_ns;
  j["usr_ns"] = r.usr_ns;
  j["sys_ns"] = r.sys_ns;
  j["ctx_involuntary"] = r.ctx_involuntary;
  j["error_text"] = std::string(r.error_text);
  j["settings"] = SettingsJson(spec, r);
  if (!spec.cgroup.empty()) {
    Json cg;
    cg["path"] = cl.program.cgroup_root + "/" + spec.cgroup;
    cg["io_weight"] = spec.cgroup_io_weight;
    cg["bfq_weight"] = spec.cgroup_bfq_weight;
    // The io.max line without its MAJ:MIN (that of the disk of the job's file).
    cg["io_max"] = spec.cgroup_io_max.empty() ? Json(nullptr)
                                              : Json(IoMaxLine("", spec.cgroup_io_max).substr(1));
    cg["created"] = r.cgroup_created_levels > 0;
    j["cgroup"] = std::move(cg);
  }
  if (spec.verify != VerifyKind::kNone) j["verify"] = VerifyJson(spec, r.verify);
  if (spec.replay != nullptr) j["replay"] = ReplayJson(spec, r.replay);
  if (!run.series.empty()) {
    if (e.members.size() == 1) {
      j["time_series"] = SeriesJson(spec, r, run.series[e.members[0]]);
    } else {
      Json list = Json::array();
      for (uint32_t m : e.members) {
        list.push_back(SeriesJson(cl.jobs[m], *run.results[m], run.series[m]));
      }
      j["member_time_series"] = std::move(list);
    }
  }
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
  hist["sync"] = Json{{"lat_ns", HistogramBuckets(r.sync.lat_hist)}};
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

Json JobJson(const ReportEntry& e, const GroupReport& group, const CommandLine& cl,
             const RunData& run) {
  const JobSpec& spec = *e.spec;
  const JobResult& r = *e.result;
  Json j;
  j["jobname"] = spec.name;
  j["groupid"] = 0;
  j["error"] = r.error;
  if (spec.continue_on_error != 0) {  // as fio: only with continue_on_error
    j["total_err"] = r.total_err;
    j["first_error"] = r.first_error;
  }
  j["eta"] = 0;
  j["elapsed"] = (r.elapsed_ns + 999999999ULL) / 1000000000ULL;  // s, rounded up
  j["job options"] = OptionsJson(spec.given);
  for (int d = 0; d < kNumDirs; ++d) {
    j[std::string(kDirNames[d])] =
        DirJson(r.dir[d], e.bw[d], e.iops[d], r.runtime_ns, group.agg_bw_bytes[d], spec);
  }
  Json sync;
  sync["total_ios"] = r.sync.total_ios;
  sync["lat_ns"] = LatencyJson(r.sync.lat_ns, r.sync.lat_hist, spec.percentiles);
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
  j["blkgen"] = BlkgenJobJson(e, cl, run);
  return j;
}

Json DiskUtilJson(const std::vector<DiskUtil>& disks) {
  Json list = Json::array();
  for (const DiskUtil& u : disks) {
    Json j;
    j["name"] = u.name;
    j["read_ios"] = u.read_ios;
    j["write_ios"] = u.write_ios;
    j["read_merges"] = u.read_merges;
    j["write_merges"] = u.write_merges;
    j["read_ticks"] = u.read_ticks;
    j["write_ticks"] = u.write_ticks;
    j["in_queue"] = u.in_queue;
    j["util"] = u.util;
    list.push_back(std::move(j));
  }
  return list;
}

}  // namespace

Json BuildJsonReport(const CommandLine& cl, const RunData& run, const WallClock& wall) {
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
  const std::vector<ReportEntry> entries = BuildReportEntries(cl.jobs, run.results);
  const GroupReport group = SummarizeGroup(entries);
  Json jobs = Json::array();
  for (const ReportEntry& e : entries) jobs.push_back(JobJson(e, group, cl, run));
  top["jobs"] = std::move(jobs);
  top["disk_util"] = DiskUtilJson(run.disk_util);
  Json extra;
  extra["schema_version"] = kJsonSchemaVersion;
  top["blkgen"] = std::move(extra);
  return top;
}

std::string FormatJsonReport(const CommandLine& cl, const RunData& run, const WallClock& wall) {
  return BuildJsonReport(cl, run, wall).dump(2) + "\n";
}

}  // namespace blkgen

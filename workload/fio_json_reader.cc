#include "fio_json_reader.h"

#include <stdexcept>

namespace blkgen {
namespace {

using Json = nlohmann::json;

const char* TypeOf(const Json& j) {
  if (j.is_number_float()) return "float";
  if (j.is_number_integer()) return "integer";
  if (j.is_string()) return "string";
  if (j.is_object()) return "object";
  if (j.is_array()) return "array";
  if (j.is_boolean()) return "boolean";
  return "null";
}

struct ReadError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace

const Json& FioJsonReader::At(const Json& j, const std::string& path, const std::string& key,
                              const char* type) {
  const std::string full = path.empty() ? key : path + "." + key;
  auto it = j.find(key);
  if (it == j.end()) throw ReadError("missing key " + full);
  const char* found = TypeOf(*it);
  used_[full] = found;
  if (std::string(found) != type) {
    throw ReadError(full + " is " + found + ", expected " + type);
  }
  return *it;
}

uint64_t FioJsonReader::Uint(const Json& j, const std::string& path, const std::string& key) {
  return At(j, path, key, "integer").get<uint64_t>();
}

double FioJsonReader::Float(const Json& j, const std::string& path, const std::string& key) {
  return At(j, path, key, "float").get<double>();
}

std::string FioJsonReader::String(const Json& j, const std::string& path, const std::string& key) {
  return At(j, path, key, "string").get<std::string>();
}

std::map<std::string, double> FioJsonReader::FloatMap(const Json& j, const std::string& path,
                                                      const std::string& key) {
  const Json& m = At(j, path, key, "object");
  std::map<std::string, double> out;
  for (auto it = m.begin(); it != m.end(); ++it)
    out[it.key()] = Float(m, path + "." + key, it.key());
  return out;
}

std::map<std::string, std::string> FioJsonReader::StringMap(const Json& j, const std::string& path,
                                                            const std::string& key) {
  const Json& m = At(j, path, key, "object");
  std::map<std::string, std::string> out;
  for (auto it = m.begin(); it != m.end(); ++it) {
    out[it.key()] = String(m, path + "." + key, it.key());
  }
  return out;
}

FioLatency FioJsonReader::Latency(const Json& j, const std::string& path, bool percentiles) {
  FioLatency l;
  l.min = Uint(j, path, "min");
  l.max = Uint(j, path, "max");
  l.mean = Float(j, path, "mean");
  l.stddev = Float(j, path, "stddev");
  l.n = Uint(j, path, "N");
  if (percentiles && l.n > 0) {
    const Json& p = At(j, path, "percentile", "object");
    for (auto it = p.begin(); it != p.end(); ++it) {
      l.percentile[it.key()] = Uint(p, path + ".percentile", it.key());
    }
  }
  return l;
}

FioDir FioJsonReader::Dir(const Json& j, const std::string& path) {
  FioDir d;
  d.io_bytes = Uint(j, path, "io_bytes");
  d.io_kbytes = Uint(j, path, "io_kbytes");
  d.bw_bytes = Uint(j, path, "bw_bytes");
  d.bw_kib = Uint(j, path, "bw");
  d.iops = Float(j, path, "iops");
  d.runtime_ms = Uint(j, path, "runtime");
  d.total_ios = Uint(j, path, "total_ios");
  d.short_ios = Uint(j, path, "short_ios");
  d.drop_ios = Uint(j, path, "drop_ios");
  d.slat = Latency(At(j, path, "slat_ns", "object"), path + ".slat_ns", false);
  d.clat = Latency(At(j, path, "clat_ns", "object"), path + ".clat_ns", true);
  d.lat = Latency(At(j, path, "lat_ns", "object"), path + ".lat_ns", false);
  d.bw_min = Uint(j, path, "bw_min");
  d.bw_max = Uint(j, path, "bw_max");
  d.bw_agg = Float(j, path, "bw_agg");
  d.bw_mean = Float(j, path, "bw_mean");
  d.bw_samples = Uint(j, path, "bw_samples");
  d.iops_mean = Float(j, path, "iops_mean");
  d.iops_samples = Uint(j, path, "iops_samples");
  return d;
}

bool FioJsonReader::Read(const std::string& text, FioReport* report, std::string* error) {
  try {
    const Json top = Json::parse(text);
    FioReport r;
    r.version = String(top, "", "fio version");
    r.timestamp = Uint(top, "", "timestamp");
    if (top.contains("global options")) r.global_options = StringMap(top, "", "global options");
    const Json& jobs = At(top, "", "jobs", "array");
    for (const Json& j : jobs) {
      const std::string path = "jobs[]";
      FioJob job;
      job.jobname = String(j, path, "jobname");
      job.groupid = Uint(j, path, "groupid");
      job.error = Uint(j, path, "error");
      job.job_options = StringMap(j, path, "job options");
      static const char* kDirs[] = {"read", "write", "trim"};
      for (int d = 0; d < 3; ++d) {
        job.dir[d] = Dir(At(j, path, kDirs[d], "object"), path + "." + kDirs[d]);
      }
      const Json& sync = At(j, path, "sync", "object");
      job.sync_ios = Uint(sync, path + ".sync", "total_ios");
      Latency(At(sync, path + ".sync", "lat_ns", "object"), path + ".sync.lat_ns", false);
      job.job_runtime_ms = Uint(j, path, "job_runtime");
      job.usr_cpu = Float(j, path, "usr_cpu");
      job.sys_cpu = Float(j, path, "sys_cpu");
      job.ctx = Uint(j, path, "ctx");
      job.majf = Uint(j, path, "majf");
      job.minf = Uint(j, path, "minf");
      job.iodepth_level = FloatMap(j, path, "iodepth_level");
      job.latency_ns = FloatMap(j, path, "latency_ns");
      job.latency_us = FloatMap(j, path, "latency_us");
      job.latency_ms = FloatMap(j, path, "latency_ms");
      r.jobs.push_back(std::move(job));
    }
    for (const Json& d : At(top, "", "disk_util", "array")) {
      const std::string path = "disk_util[]";
      FioDiskUtil u;
      u.name = String(d, path, "name");
      u.read_ios = Uint(d, path, "read_ios");
      u.write_ios = Uint(d, path, "write_ios");
      Uint(d, path, "read_merges");
      Uint(d, path, "write_merges");
      Uint(d, path, "read_ticks");
      Uint(d, path, "write_ticks");
      u.in_queue = Uint(d, path, "in_queue");
      u.util = Float(d, path, "util");
      r.disk_util.push_back(u);
    }
    *report = std::move(r);
    return true;
  } catch (const std::exception& e) {
    *error = e.what();
    return false;
  }
}

}  // namespace blkgen

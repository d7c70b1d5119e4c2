// FioJsonReader: reads the parts of a fio JSON report that blklab uses, from
// fio or from blkgen, demanding fio's types (integer vs float), and records
// every key it read with the type found. Tests read fio's and blkgen's
// report of the same job and compare the records.
// Thread-safety: one reader per thread.
#ifndef BLKGEN_FIO_JSON_READER_H_
#define BLKGEN_FIO_JSON_READER_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace blkgen {

struct FioLatency {
  uint64_t min = 0, max = 0, n = 0;            // ns
  double mean = 0, stddev = 0;                 // ns
  std::map<std::string, uint64_t> percentile;  // key "99.000000" -> ns
};

struct FioDir {
  uint64_t io_bytes = 0, io_kbytes = 0, bw_bytes = 0, bw_kib = 0, runtime_ms = 0;
  uint64_t total_ios = 0, short_ios = 0, drop_ios = 0;
  double iops = 0;
  FioLatency slat, clat, lat;
  uint64_t bw_min = 0, bw_max = 0, bw_samples = 0, iops_samples = 0;
  double bw_mean = 0, bw_agg = 0, iops_mean = 0;
};

struct FioJob {
  std::string jobname;
  uint64_t groupid = 0, error = 0, job_runtime_ms = 0, sync_ios = 0;
  std::map<std::string, std::string> job_options;
  FioDir dir[3];  // read, write, trim
  double usr_cpu = 0, sys_cpu = 0;
  uint64_t ctx = 0, majf = 0, minf = 0;
  std::map<std::string, double> iodepth_level, latency_ns, latency_us, latency_ms;
};

struct FioDiskUtil {
  std::string name;
  uint64_t read_ios = 0, write_ios = 0, in_queue = 0;
  double util = 0;
};

struct FioReport {
  std::vector<FioDiskUtil> disk_util;
  std::string version;
  uint64_t timestamp = 0;
  std::map<std::string, std::string> global_options;
  std::vector<FioJob> jobs;
};

class FioJsonReader {
 public:
  // Parses `text`. On a missing key or a wrong type returns false and says
  // which in *error.
  bool Read(const std::string& text, FioReport* report, std::string* error);

  // Key paths read ("jobs[].read.clat_ns.percentile.99.000000") and their
  // JSON types ("integer", "float", "string", "object").
  const std::map<std::string, std::string>& used() const { return used_; }

 private:
  const nlohmann::json& At(const nlohmann::json& j, const std::string& path, const std::string& key,
                           const char* type);
  uint64_t Uint(const nlohmann::json& j, const std::string& path, const std::string& key);
  double Float(const nlohmann::json& j, const std::string& path, const std::string& key);
  std::string String(const nlohmann::json& j, const std::string& path, const std::string& key);
  FioLatency Latency(const nlohmann::json& j, const std::string& path, bool percentiles);
  FioDir Dir(const nlohmann::json& j, const std::string& path);
  std::map<std::string, double> FloatMap(const nlohmann::json& j, const std::string& path,
                                         const std::string& key);
  std::map<std::string, std::string> StringMap(const nlohmann::json& j, const std::string& path,
                                               const std::string& key);

  std::map<std::string, std::string> used_;
};

}  // namespace blkgen

#endif  // BLKGEN_FIO_JSON_READER_H_

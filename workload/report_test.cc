#include "report.h"

#include <gtest/gtest.h>

#include <memory>

#include "json_output.h"
#include "normal_output.h"
#include "options.h"

namespace blkgen {
namespace {

TEST(ReportTest, SummarizeDirUsesMeasuredRuntime) {
  DirResult d;
  d.io_bytes = 304246784;
  d.total_ios = 74279;
  const DirReport r = SummarizeDir(d, 1001000000ULL);  // 1001 ms
  EXPECT_EQ(r.io_kbytes, 297116u);
  EXPECT_EQ(r.runtime_ms, 1001u);
  EXPECT_EQ(r.bw_bytes, 303942841u);  // fio printed the same for this job
  EXPECT_EQ(r.bw_kib, 296819u);
  EXPECT_NEAR(r.iops, 74204.795205, 1e-6);
}

TEST(ReportTest, ShortRunHasAtLeastOneMs) {
  DirResult d;
  d.io_bytes = 4096;
  d.total_ios = 1;
  const DirReport r = SummarizeDir(d, 300000);  // 0.3 ms
  EXPECT_EQ(r.runtime_ms, 1u);
  EXPECT_EQ(r.bw_bytes, 4096u * 1000000000ULL / 300000);
}

TEST(ReportTest, IdleDirectionHasZeroRuntime) {
  const DirReport r = SummarizeDir(DirResult{}, 5000000000ULL);
  EXPECT_EQ(r.runtime_ms, 0u);
  EXPECT_EQ(r.bw_bytes, 0u);
  EXPECT_EQ(r.iops, 0.0);
}

TEST(ReportTest, MergedJobsSumTheirContextSwitches) {
  JobResult a, b;
  a.ctx = 10;
  a.ctx_involuntary = 3;
  b.ctx = 7;
  b.ctx_involuntary = 7;
  MergeInto(&a, b);
  EXPECT_EQ(a.ctx, 17u);
  EXPECT_EQ(a.ctx_involuntary, 10u);
}

TEST(ReportTest, DepthSharesFloorLikeFio) {
  const uint64_t map[kDepthBuckets] = {1, 0, 0, 9999, 0, 0, 0};
  const auto s = DepthShares(map);
  EXPECT_DOUBLE_EQ(s[0], 0.1);  // 0.01% shows as 0.1
  EXPECT_DOUBLE_EQ(s[1], 0.0);
  EXPECT_NEAR(s[3], 99.99, 1e-9);
}

TEST(ReportTest, LatencySharesBins) {
  JobResult r;
  r.dir[0].total_ios = 4;
  r.dir[0].clat_hist.Add(300);         // ns bin "500" (250..499)
  r.dir[0].clat_hist.Add(80000);       // us bin "100" (50..99 us)
  r.dir[0].clat_hist.Add(1500000);     // ms bin "2" (1 ms)
  r.dir[0].clat_hist.Add(3000000000);  // ms bin ">=2000"
  const LatencyShares s = ComputeLatencyShares(r);
  EXPECT_DOUBLE_EQ(s.ns[7], 25.0);
  EXPECT_DOUBLE_EQ(s.us[5], 25.0);
  EXPECT_DOUBLE_EQ(s.ms[0], 25.0);
  EXPECT_DOUBLE_EQ(s.ms[11], 25.0);
}

TEST(ReportTest, ScaledNumberLikeFioNum2str) {
  EXPECT_EQ(ScaledNumber(55741, 4, 1000), "55.7k");
  EXPECT_EQ(ScaledNumber(2048, 4, 1000), "2048");
  EXPECT_EQ(ScaledNumber(228000000, 4, 1000), "228M");
  EXPECT_EQ(ScaledNumber(228170000, 4, 1024), "218Mi");
}

// A filled-in run of one read job, for the output tests.
struct Fixture {
  CommandLine cl;
  std::unique_ptr<JobResult> result = std::make_unique<JobResult>();

  Fixture() {
    EXPECT_TRUE(ParseCommandLine({"--ioengine=io_uring", "--name=x", "--rw=randread",
                                  "--filename=/dev/null", "--size=1m"},
                                 &cl)
                    .ok());
    JobResult& r = *result;
    r.measured = true;
    r.runtime_ns = 1000000000;
    r.elapsed_ns = 1000000000;
    r.iodepth = 1;
    for (uint64_t i = 1; i <= 1000; ++i) {
      DirResult& d = r.dir[0];
      d.io_bytes += 4096;
      ++d.total_ios;
      d.slat_ns.Add(100);
      d.clat_ns.Add(i * 1000);
      d.lat_ns.Add(i * 1000 + 100);
      d.clat_hist.Add(i * 1000);
      d.lat_hist.Add(i * 1000 + 100);
    }
    r.depth_map[0] = 1000;
  }
};

TEST(JsonOutputTest, FioTypesEvenForIntegralFloats) {
  Fixture f;
  const JobResult* results[] = {f.result.get()};
  RunData run;
  run.results = results;
  const auto j = BuildJsonReport(f.cl, run, WallClock{1700000000123});
  EXPECT_EQ(j["fio version"], std::string(kBlkgenVersion));
  EXPECT_EQ(j["timestamp"], 1700000000);
  EXPECT_EQ(j["timestamp_ms"], 1700000000123);
  const auto& job = j["jobs"][0];
  const auto& read = job["read"];
  EXPECT_TRUE(read["iops"].is_number_float());  // 1000.0
  EXPECT_TRUE(read["bw"].is_number_integer());
  EXPECT_TRUE(read["clat_ns"]["mean"].is_number_float());
  EXPECT_TRUE(read["clat_ns"]["min"].is_number_integer());
  EXPECT_TRUE(job["usr_cpu"].is_number_float());
  EXPECT_TRUE(job["latency_us"]["1000"].is_number_float());
  EXPECT_TRUE(job["iodepth_level"]["1"].is_number_float());
  EXPECT_EQ(read["clat_ns"]["percentile"].size(), 17u);
  EXPECT_NEAR(read["clat_ns"]["percentile"]["99.000000"].get<double>(), 990000.0,
              990000.0 * LatencyHistogram::kRelativeErrorBound);
  EXPECT_TRUE(read["lat_ns"].contains("percentile"));
  EXPECT_FALSE(job["write"]["clat_ns"].contains("percentile"));  // as fio: no samples
  EXPECT_EQ(job["job options"]["rw"], "randread");
  EXPECT_EQ(j["global options"]["ioengine"], "io_uring");
  uint64_t counted = 0;
  for (const auto& bucket : job["blkgen"]["histogram"]["read"]["clat_ns"]) {
    EXPECT_LE(bucket[0].get<uint64_t>(), bucket[1].get<uint64_t>());
    counted += bucket[2].get<uint64_t>();
  }
  EXPECT_EQ(counted, 1000u);
  EXPECT_EQ(job["blkgen"]["settings"]["bs"][0], 4096u);
}

TEST(JsonOutputTest, SameResultsSameBytesApartFromWallClock) {
  Fixture a, b;
  const JobResult* ra[] = {a.result.get()};
  const JobResult* rb[] = {b.result.get()};
  RunData run_a, run_b;
  run_a.results = ra;
  run_b.results = rb;
  auto ja = BuildJsonReport(a.cl, run_a, WallClock{1});
  auto jb = BuildJsonReport(b.cl, run_b, WallClock{999999999});
  EXPECT_NE(ja.dump(), jb.dump());
  for (auto* j : {&ja, &jb}) {
    j->erase("timestamp");
    j->erase("timestamp_ms");
    j->erase("time");
  }
  EXPECT_EQ(ja.dump(), jb.dump());
}

TEST(NormalOutputTest, HasFioLines) {
  Fixture f;
  const JobResult* results[] = {f.result.get()};
  RunData run;
  run.results = results;
  const std::string text = FormatBanner(f.cl) + FormatNormalReport(f.cl, run);
  for (const char* needle : {"x: (g=0): rw=randread", "Starting 1 process",
                             "read: IOPS=1000, BW=", "clat (nsec): min=1000, max=1000.0k",
                             "clat percentiles (usec):", "99.00th=[  990]",
                             "cpu          : usr=", "IO depths    : 1=100.0%",
                             "Run status group 0 (all jobs):", "READ: bw="}) {
    EXPECT_NE(text.find(needle), std::string::npos) << needle << "\n" << text;
  }
}

}  // namespace
}  // namespace blkgen

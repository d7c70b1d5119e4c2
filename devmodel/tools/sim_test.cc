#include "sim.h"

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "devmodel/devmodel.h"

namespace devmodel::sim {
namespace {

constexpr std::uint64_t kSecond = 1000000000;

std::string Profile(const char* name) { return std::string(DEVMODEL_PROFILE_DIR) + "/" + name; }

// A small SSD written in full (so every read senses a page): 4 channels x 2
// dies x 2 planes, 50 us read, 800 MB/s channels, a 3200 MB/s link, 4 us
// per command.
constexpr const char* kSmallSsd = R"(
[device]
model = "ssd"
[ssd]
channels = 4
dies_per_channel = 2
planes_per_die = 2
blocks_per_plane = 64
pages_per_block = 64
page_bytes = 16384
mapping_unit_bytes = 4096
page_read_us = 50.0
page_program_us = 500.0
block_erase_ms = 3.0
channel_mb_s = 800
host_link_mb_s = 3200
controller_overhead_us = 4.0
write_buffer_bytes = 1048576
precondition = "full"
)";

std::string WriteProfile(const std::string& name, const char* text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

JobSpec Job(const std::string& text) {
  JobSpec j;
  std::string error;
  EXPECT_TRUE(ParseJob(text, &j, &error)) << error;
  return j;
}

std::vector<JobResult> RunOn(const std::string& profile, const SimSpec& spec) {
  char* err = nullptr;
  devmodel_t* m = devmodel_open(profile.c_str(), spec.seed, &err);
  EXPECT_NE(m, nullptr) << (err != nullptr ? err : "");
  std::vector<JobResult> out;
  std::string error;
  EXPECT_TRUE(Run(m, spec, &out, &error)) << error;
  devmodel_close(m);
  return out;
}

SimSpec Spec(std::vector<std::string> jobs, std::uint64_t runtime_ns = kSecond,
             std::uint64_t ramp_ns = 0) {
  SimSpec s;
  s.ramp_ns = ramp_ns;
  s.runtime_ns = runtime_ns;
  for (const auto& j : jobs) s.jobs.push_back(Job(j));
  return s;
}

// fixed-10us: every request takes 10 us, so a QD1 job completes one per 10 us.
TEST(SimTest, Qd1OnFixed10usIs100kIops) {
  const auto r = RunOn(Profile("fixed-10us.toml"), Spec({"r:rw=randread,bs=4k,iodepth=1"}));
  EXPECT_EQ(r[0].read.ios, 100000u);
  EXPECT_EQ(r[0].read.bytes, 100000u * 4096);
  EXPECT_EQ(r[0].write.ios, 0u);
  EXPECT_EQ(r[0].read.clat_min_ns, 10000u);
  EXPECT_EQ(r[0].read.clat_max_ns, 10000u);
  // 10000 ns lies in [8192, 16384), 64 buckets of 128 ns: [9984, 10112).
  EXPECT_EQ(r[0].read.clat.Percentile(50), 9984u + 64);
  EXPECT_EQ(r[0].read.clat.Percentile(99.9), 9984u + 64);
}

TEST(SimTest, Qd4OnFixed10usIs400kIops) {
  const auto r = RunOn(Profile("fixed-10us.toml"), Spec({"r:rw=randread,bs=4k,iodepth=4"}));
  EXPECT_EQ(r[0].read.ios, 400000u);
}

TEST(SimTest, RampIsNotMeasured) {
  const auto r = RunOn(Profile("fixed-10us.toml"),
                       Spec({"r:rw=randread,iodepth=1"}, kSecond / 2, kSecond / 2));
  EXPECT_EQ(r[0].read.ios, 50000u);
}

// Jobs run at once; on a device with a fixed latency they do not interact.
TEST(SimTest, JobsRunSideBySide) {
  const auto r = RunOn(Profile("fixed-10us.toml"),
                       Spec({"reader:rw=randread,iodepth=1", "writer:rw=randwrite,iodepth=8"}));
  EXPECT_EQ(r[0].read.ios, 100000u);
  EXPECT_EQ(r[1].write.ios, 800000u);
  EXPECT_EQ(r[1].read.ios, 0u);
}

// 40,960,000 bytes/s of 4 KiB writes: one every 100 us, whatever the depth;
// a write rate does not hold reads back.
TEST(SimTest, RateLimitsWritesOnly) {
  const auto r = RunOn(Profile("fixed-10us.toml"),
                       Spec({"w:rw=randwrite,iodepth=256,rate=,40960000",
                             "r:rw=randread,iodepth=1,rate=,40960000"}));
  EXPECT_EQ(r[0].write.ios, 10000u);
  EXPECT_EQ(r[0].write.clat_max_ns, 10000u);  // paced writes never queue
  EXPECT_EQ(r[1].read.ios, 100000u);
}

TEST(SimTest, MixFollowsRwmixread) {
  const auto r =
      RunOn(Profile("fixed-10us.toml"), Spec({"m:rw=randrw,rwmixread=70,iodepth=32"}));
  const double reads = static_cast<double>(r[0].read.ios);
  const double all = reads + static_cast<double>(r[0].write.ios);
  EXPECT_EQ(all, 3200000);
  EXPECT_NEAR(reads / all, 0.70, 0.002);  // 3.2M draws: sd 0.00026
}

// On an SSD written in full and idle, a QD1 4 KiB read is the controller
// overhead, one page read, the channel transfer and the link transfer.
TEST(SimTest, Qd1ReadOnAnSsdIsItsDeviceTime) {
  const std::string path = WriteProfile("sim-small-ssd.toml", kSmallSsd);
  const auto r = RunOn(path, Spec({"r:rw=randread,bs=4k,iodepth=1"}));
  const std::uint64_t channel = (4096 * 1000 + 799) / 800;  // 5120 ns
  const std::uint64_t link = (4096 * 1000 + 3199) / 3200;   // 1280 ns
  const std::uint64_t each = 4000 + 50000 + channel + link;
  EXPECT_EQ(r[0].read.clat_min_ns, each);
  EXPECT_EQ(r[0].read.clat_max_ns, each);
  EXPECT_EQ(r[0].read.ios, kSecond / each);
}

TEST(SimTest, SameInputsSameBytesAndTheSeedMatters) {
  const std::string path = WriteProfile("sim-small-ssd-mix.toml", kSmallSsd);
  auto json = [&](std::uint64_t seed) {
    SimSpec s = Spec({"reader:rw=randread,iodepth=1", "writer:rw=randwrite,iodepth=64"},
                     kSecond / 4, kSecond / 10);
    s.seed = seed;
    return ResultJson(path, s, RunOn(path, s), "");
  };
  const std::string a = json(3);
  EXPECT_EQ(a, json(3));
  EXPECT_NE(a, json(4));
  const auto j = nlohmann::json::parse(a);
  EXPECT_GT(j["jobs"][1]["write"]["iops"].get<double>(), 0);
  EXPECT_TRUE(j["jobs"][0]["read"]["clat_ns"]["percentile"].contains("99.900000"));
}

// A sequential fill (io_size = the region) of the small SSD, 4x the blocks,
// with a 384 MiB SLC cache and a 16 MiB buffer, logged per 50 ms: each
// program unit is 2 planes x 16 KiB = 32 KiB, 40.96 us over its 800 MB/s
// channel, so 8 dies write 8 x 32768 B / (40.96 + 100) us = 1859.7 MB/s in
// the cache (its 384 MiB: 217 ms) and 8 x 32768 B / (40.96 + 500) us =
// 484.6 MB/s after it (both below the channels' and the link's 3,200);
// the job ends once its 1 GiB is written. Writes complete as the buffer
// frees program units, so an interval's bytes are within 2 writes (2 x
// 128 KiB) of the rate's; the first interval also fills the buffer.
TEST(SimTest, FillLogsItsBandwidthPerIntervalAndEnds) {
  std::string text = kSmallSsd;
  text.replace(text.find("blocks_per_plane = 64"), 21, "blocks_per_plane = 256");
  text.replace(text.find("write_buffer_bytes = 1048576\n"), 29, "");
  text.replace(text.find("precondition = \"full\""), 22,
               "precondition = \"none\"\nslc_static_bytes = 402653184\n"
               "slc_program_us = 100.0\nwrite_buffer_bytes = 16777216");
  const std::string path = WriteProfile("sim-small-ssd-slc.toml", text.c_str());
  SimSpec s = Spec({"fill:rw=write,bs=128k,iodepth=32,size=1073741824,io_size=1073741824"},
                   10 * kSecond);
  s.log_interval_ns = 50000000;
  const auto r = RunOn(path, s);
  ASSERT_TRUE(r[0].finished);
  EXPECT_EQ(r[0].write.bytes, 1073741824u);
  std::uint64_t sum = 0;
  for (std::uint64_t b : r[0].interval_bytes) sum += b;
  EXPECT_EQ(sum, 1073741824u);
  const double in_cache = 8 * 32768 / (40.96 + 100.0) * 50000;  // bytes per interval
  const double after = 8 * 32768 / (40.96 + 500.0) * 50000;
  for (int i : {1, 2, 3}) EXPECT_NEAR(r[0].interval_bytes[i], in_cache, 2 * 131072) << i;
  const std::size_t n = r[0].interval_bytes.size();
  ASSERT_GT(n, 20u);
  for (std::size_t i = 7; i + 1 < n; ++i) {
    EXPECT_NEAR(r[0].interval_bytes[i], after, 2 * 131072) << i;
  }
  const std::string log = BandwidthLog(s, s.jobs[0], r[0]);
  EXPECT_EQ(log.substr(0, log.find('\n')),
            "50, " + std::to_string((r[0].interval_bytes[0] * 20 + 512) / 1024) + ", 1, 0, 0");
  const std::string last = log.substr(log.rfind('\n', log.size() - 2) + 1);
  EXPECT_EQ(std::stoull(last.substr(0, last.find(','))), (r[0].end_ns + 999999) / 1000000);
  const auto j = nlohmann::json::parse(ResultJson(path, s, r, ""));
  EXPECT_EQ(j["jobs"][0]["write"]["runtime"].get<std::uint64_t>(), r[0].end_ns / 1000000);
}

TEST(SimTest, HistogramIsFios) {
  EXPECT_EQ(LatencyHistogram::BucketValue(LatencyHistogram::BucketOf(100)), 100u);
  // A figure of the reference drive's fio JSON is a bucket's middle.
  EXPECT_EQ(LatencyHistogram::BucketValue(LatencyHistogram::BucketOf(199680)), 199680u);
  LatencyHistogram h;
  for (std::uint64_t v = 1; v <= 100; ++v) h.Add(v);
  EXPECT_EQ(h.Percentile(50), 50u);
  EXPECT_EQ(h.Percentile(99), 99u);
}

TEST(SimTest, ParseJobAcceptsFiosSpellingsAndRefusesOthers) {
  JobSpec j = Job("w:rw=randwrite,bs=128k,iodepth=256,rate=,100000000");
  EXPECT_EQ(j.read_pct, 0u);
  EXPECT_EQ(j.block_bytes, 131072u);
  EXPECT_EQ(j.read_rate_bytes_s, 0u);
  EXPECT_EQ(j.write_rate_bytes_s, 100000000u);
  j = Job("b:rw=read,rate=1m");
  EXPECT_FALSE(j.random);
  EXPECT_EQ(j.read_rate_bytes_s, 1048576u);
  EXPECT_EQ(j.write_rate_bytes_s, 1048576u);
  std::string error;
  EXPECT_FALSE(ParseJob("x:rw=trim", &j, &error));
  EXPECT_EQ(error, "job x: rw=trim: expected read, write, randread, randwrite, rw, readwrite or randrw");
  EXPECT_FALSE(ParseJob("x:numjobs=4", &j, &error));
  EXPECT_FALSE(ParseJob("x:rw=randread,rwmixread=70", &j, &error));
  EXPECT_FALSE(ParseJob(":rw=read", &j, &error));
  EXPECT_FALSE(ParseJob("x:rw=write,io_size=0", &j, &error));
  EXPECT_EQ(Job("f:rw=write,bs=128k,io_size=1g").io_size_bytes, 1073741824u);
  std::uint64_t ns = 0;
  EXPECT_TRUE(ParseTime("500ms", &ns, &error));
  EXPECT_EQ(ns, 500000000u);
  EXPECT_FALSE(ParseTime("5 s", &ns, &error));
}

// devmodel-sim with `args`: its exit status, stdout and stderr.
struct ToolRun {
  int status;
  std::string out, err;
};
ToolRun Tool(const std::string& args) {
  const std::string out = ::testing::TempDir() + "/sim-tool.out";
  const std::string err = ::testing::TempDir() + "/sim-tool.err";
  const int rc =
      std::system((std::string(DEVMODEL_SIM_BINARY) + " " + args + " >" + out + " 2>" + err).c_str());
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, read(out), read(err)};
}

// A fill saved with --save-state, then random reads of the filled region
// with --load-state. Expected from the model: a unit never written costs no
// NAND time and counts as an unmapped read, so on the fresh drive (no
// precondition) every read is unmapped, and on the loaded one none is; the
// loaded counters carry the fill's writes; the same arguments give the same
// bytes; a state is refused for another profile.
TEST(SimToolTest, SaveStateAfterAFillLoadStateReadsIt) {
  std::string text = kSmallSsd;
  text.replace(text.find("precondition = \"full\""), 22, "precondition = \"none\"");
  const std::string profile = WriteProfile("sim-tool-ssd.toml", text.c_str());
  const std::string state = ::testing::TempDir() + "/sim-tool.state";
  std::remove(state.c_str());
  const std::string region = "size=64m";
  const ToolRun fill = Tool("--save-state " + state + " --runtime 10s " + profile +
                            " fill:rw=write,bs=128k,iodepth=8,io_size=64m," + region);
  ASSERT_EQ(fill.status, 0) << fill.err;
  const auto filled = nlohmann::json::parse(fill.out);
  EXPECT_EQ(filled["counters"]["host_bytes_written"], 64 << 20);

  const std::string reads = " --runtime 20ms " + profile + " reader:rw=randread,iodepth=4," + region;
  const ToolRun loaded = Tool("--load-state " + state + reads);
  ASSERT_EQ(loaded.status, 0) << loaded.err;
  const auto l = nlohmann::json::parse(loaded.out)["counters"];
  EXPECT_GT(l["reads"], 100);
  EXPECT_EQ(l["unmapped_reads"], 0);
  EXPECT_EQ(l["host_bytes_written"], 64 << 20);  // the fill's, from the state
  EXPECT_EQ(Tool("--load-state " + state + reads).out, loaded.out);

  const ToolRun fresh = Tool(reads);
  ASSERT_EQ(fresh.status, 0) << fresh.err;
  const auto f = nlohmann::json::parse(fresh.out)["counters"];
  EXPECT_EQ(f["unmapped_reads"], f["reads"]);
  EXPECT_EQ(f["host_bytes_written"], 0);

  const ToolRun other = Tool("--load-state " + state + " --runtime 1ms " + Profile("fixed-10us.toml") +
                             " r:rw=randread");
  EXPECT_EQ(other.status, 2);
  EXPECT_NE(other.err.find(state + ": saved for profile text hash"), std::string::npos)
      << other.err;
  // A time-based run ends with requests in flight: they are completed first.
  const ToolRun timed = Tool("--save-state " + state + ".2 --runtime 5ms " + profile +
                             " w:rw=randwrite,iodepth=32");
  EXPECT_EQ(timed.status, 0) << timed.err;
  const ToolRun both = Tool("--load-state " + state + " --state-cache /tmp" + reads);
  EXPECT_EQ(both.status, 2);
  EXPECT_NE(both.err.find("exclude each other"), std::string::npos) << both.err;
}

}  // namespace
}  // namespace devmodel::sim

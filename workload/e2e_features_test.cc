// End-to-end tests of blkgen's own features, running the built binary
// (BLKGEN_BINARY) on temporary files: verify finds injected corruption,
// the I/O sequence is the same across runs and engines, cgroup files are
// written (against a directory standing in for the cgroup root), time
// series and error reporting.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "e2e_util.h"

namespace blkgen {
namespace {

using Json = nlohmann::json;

class FeaturesTest : public E2eTest {
 protected:
  // Runs blkgen with a JSON report; returns the parsed report (null if none).
  Json Run(std::vector<std::string> args, RunResult* out = nullptr) {
    const std::string report = dir_ + "/report.json";
    unlink(report.c_str());
    std::vector<std::string> argv = {BLKGEN_BINARY, "--output-format=json", "--output=" + report};
    argv.insert(argv.end(), args.begin(), args.end());
    const RunResult r = RunCommand(argv, dir_);
    if (out != nullptr) *out = r;
    const std::string text = ReadFile(report);
    if (text.empty()) return Json();
    return Json::parse(text);
  }

  // Overwrites `bytes` at `offset` of `path` with `data`.
  static void Poke(const std::string& path, uint64_t offset, const std::string& data) {
    const int fd = open(path.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(pwrite(fd, data.data(), data.size(), static_cast<off_t>(offset)),
              static_cast<ssize_t>(data.size()));
    close(fd);
  }
  static std::string Peek(const std::string& path, uint64_t offset, size_t n) {
    std::string data(n, '\0');
    const int fd = open(path.c_str(), O_RDONLY);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(pread(fd, data.data(), n, static_cast<off_t>(offset)), static_cast<ssize_t>(n));
    close(fd);
    return data;
  }
};

TEST_F(FeaturesTest, VerifyPassesOnACleanRunAndReadsBackWhatItWrote) {
  const std::string file = dir_ + "/v.dat";
  RunResult r;
  Json j = Run({"--name=w", "--filename=" + file, "--size=4M", "--rw=randwrite", "--bs=4k",
                "--ioengine=io_uring", "--iodepth=8", "--verify=crc32c", "--direct=" + direct_},
               &r);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const Json& v = j["jobs"][0]["blkgen"]["verify"];
  EXPECT_EQ(v["mismatches"], 0);
  EXPECT_EQ(v["verify_phase_reads"], 1024);  // the verify phase read every block back
  EXPECT_EQ(v["checked"], 1024);
  EXPECT_EQ(j["jobs"][0]["read"]["total_ios"], 0);  // not counted as the job's reads

  // A separate read job checks the same blocks: header, offset, checksum.
  j = Run(
      {"--name=r", "--filename=" + file, "--size=4M", "--rw=read", "--bs=4k", "--verify=crc32c"},
      &r);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(j["jobs"][0]["blkgen"]["verify"]["checked"], 1024);
  EXPECT_EQ(j["jobs"][0]["blkgen"]["verify"]["mismatches"], 0);
}

TEST_F(FeaturesTest, VerifyFindsAnInjectedCorruption) {
  const std::string file = dir_ + "/c.dat";
  RunResult r;
  Run({"--name=w", "--filename=" + file, "--size=1M", "--rw=write", "--bs=4k", "--verify=crc32c",
       "--do_verify=0"},
      &r);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  // One flipped byte in the data of block 37, a block copied over block 100
  // (a misdirected write).
  const std::string byte = Peek(file, 37 * 4096 + 1000, 1);
  Poke(file, 37 * 4096 + 1000, std::string(1, static_cast<char>(byte[0] ^ 0x40)));
  Poke(file, 100 * 4096, Peek(file, 99 * 4096, 4096));

  const Json j = Run({"--name=r", "--filename=" + file, "--size=1M", "--rw=read", "--bs=4k",
                      "--ioengine=libaio", "--iodepth=4", "--verify=crc32c"},
                     &r);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.stderr_text.find("verify mismatch at offset 151552"), std::string::npos)
      << r.stderr_text;
  const Json& job = j["jobs"][0];
  EXPECT_EQ(job["error"], EILSEQ);  // fio's error for a verify failure
  EXPECT_TRUE(job["blkgen"]["failed"].get<bool>());
  const Json& v = job["blkgen"]["verify"];
  EXPECT_EQ(v["checked"], 256);
  EXPECT_EQ(v["mismatches"], 2);
  ASSERT_EQ(v["first_mismatches"].size(), 2u);
  const Json& flipped = v["first_mismatches"][0];
  EXPECT_EQ(flipped["offset"], 37 * 4096);
  EXPECT_EQ(flipped["found"]["offset"], 37 * 4096);  // header intact, data not
  EXPECT_NE(flipped["found"]["crc32c"], flipped["expected"]["crc32c"]);
  const Json& moved = v["first_mismatches"][1];
  EXPECT_EQ(moved["offset"], 100 * 4096);
  EXPECT_EQ(moved["expected"]["offset"], 100 * 4096);
  EXPECT_EQ(moved["found"]["offset"], 99 * 4096);
}

TEST_F(FeaturesTest, VerifyInMixedJobsChecksWhatTheJobWrote) {
  RunResult r;
  const Json j = Run({"--name=m", "--filename=" + dir_ + "/m.dat", "--size=2M", "--rw=randrw",
                      "--bs=4k", "--ioengine=io_uring", "--iodepth=16", "--norandommap",
                      "--runtime=300ms", "--time_based", "--verify=crc32c"},
                     &r);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const Json& v = j["jobs"][0]["blkgen"]["verify"];
  EXPECT_EQ(v["mismatches"], 0);
  EXPECT_GT(v["checked"].get<uint64_t>(), 100u);
  EXPECT_GT(v["unchecked"].get<uint64_t>(), 0u);  // reads of blocks not written yet
}

// The I/O log of a job (fio's write_iolog, version 2) without its header.
std::vector<std::string> IologLines(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

TEST_F(FeaturesTest, SameSequenceAcrossRunsAndEngines) {
  const std::string file = dir_ + "/d.dat";
  std::vector<std::vector<std::string>> logs;
  for (const char* engine : {"psync", "io_uring", "libaio", "io_uring"}) {
    const std::string log = dir_ + "/" + engine + std::to_string(logs.size()) + ".log";
    RunResult r;
    Run({"--name=d", "--filename=" + file, "--size=8M", "--rw=randrw", "--rwmixread=60",
         "--bssplit=4k/50:16k/30:64k/20,8k/", "--ioengine=" + std::string(engine), "--iodepth=16",
         "--iodepth_batch_submit=4", "--fsync=32", "--randseed=1234", "--write_iolog=" + log},
        &r);
    ASSERT_EQ(r.exit_code, 0) << engine << ": " << r.stderr_text;
    logs.push_back(IologLines(log));
  }
  ASSERT_GT(logs[0].size(), 500u);
  EXPECT_EQ(logs[0][0], "fio version 2 iolog");
  bool reads = false, writes = false, syncs = false;
  for (const std::string& l : logs[0]) {
    reads |= l.find(" read ") != std::string::npos;
    writes |= l.find(" write ") != std::string::npos;
    syncs |= l.find(" sync ") != std::string::npos;
  }
  EXPECT_TRUE(reads && writes && syncs);
  for (size_t i = 1; i < logs.size(); ++i) EXPECT_EQ(logs[i], logs[0]) << "run " << i;
}

TEST_F(FeaturesTest, TimeSeriesPerInterval) {
  RunResult r;
  const Json j = Run({"--name=t", "--filename=" + dir_ + "/t.dat", "--size=4M", "--rw=randread",
                      "--ioengine=io_uring", "--iodepth=4", "--runtime=1", "--time_based",
                      "--blkgen_log_interval=200ms"},
                     &r);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const Json& ts = j["jobs"][0]["blkgen"]["time_series"];
  EXPECT_EQ(ts["interval_ns"], 200000000);
  const size_t n = ts["end_ns"].size();
  EXPECT_GE(n, 4u);
  EXPECT_LE(n, 6u);
  ASSERT_EQ(ts["read"]["iops"].size(), n);
  ASSERT_EQ(ts["read"]["clat_p99_ns"].size(), n);
  EXPECT_FALSE(ts.contains("write"));
  for (size_t i = 0; i < n; ++i) {
    EXPECT_GT(ts["read"]["iops"][i].get<double>(), 0);
    EXPECT_LE(ts["read"]["clat_p50_ns"][i].get<uint64_t>(),
              ts["read"]["clat_p99_ns"][i].get<uint64_t>());
  }
}

// A directory standing in for the cgroup v2 root, with what the kernel
// would show: controllers offered, and the job's cgroup with its files.
class CgroupTest : public FeaturesTest {
 protected:
  void SetUp() override {
    FeaturesTest::SetUp();
    root_ = dir_ + "/cgroup";
    mkdir(root_.c_str(), 0755);
    std::ofstream(root_ + "/cgroup.controllers") << "cpuset cpu io memory pids\n";
    std::ofstream(root_ + "/cgroup.subtree_control") << "";
    mkdir((root_ + "/blk").c_str(), 0755);
    for (const char* f : {"cgroup.procs", "io.weight", "io.bfq.weight", "io.max"}) {
      std::ofstream(root_ + "/blk/" + f) << "";
    }
  }
  std::string root_;
};

TEST_F(CgroupTest, JobWritesLimitsAndJoinsItsCgroup) {
  RunResult r;
  const Json j = Run({"--cgroup-root=" + root_, "--name=c", "--filename=" + dir_ + "/c.dat",
                      "--size=1M", "--cgroup=blk", "--cgroup_io_weight=300",
                      "--cgroup_bfq_weight=50", "--cgroup_io_max=riops=100,wbps=1m"},
                     &r);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(ReadFile(root_ + "/cgroup.subtree_control"), "+io");
  EXPECT_EQ(ReadFile(root_ + "/blk/io.weight"), "default 300");
  EXPECT_EQ(ReadFile(root_ + "/blk/io.bfq.weight"), "default 50");
  const std::string io_max = ReadFile(root_ + "/blk/io.max");
  EXPECT_NE(io_max.find(":0 wbps=1048576 riops=100"), std::string::npos) << io_max;
  const std::string procs = ReadFile(root_ + "/blk/cgroup.procs");
  EXPECT_GT(std::stol(procs), 0) << procs;
  const Json& cg = j["jobs"][0]["blkgen"]["cgroup"];
  EXPECT_EQ(cg["path"], root_ + "/blk");
  EXPECT_FALSE(cg["created"].get<bool>());
}

TEST_F(CgroupTest, ErrorsNameTheFileAndTheKernelsText) {
  RunResult r;
  std::ofstream(root_ + "/cgroup.controllers") << "cpu memory\n";
  Run({"--cgroup-root=" + root_, "--name=c", "--filename=" + dir_ + "/c.dat", "--size=1M",
       "--cgroup=blk"},
      &r);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.stderr_text.find("no io controller in '" + root_ + "/cgroup.controllers'"),
            std::string::npos)
      << r.stderr_text;

  std::ofstream(root_ + "/cgroup.controllers") << "io\n";
  unlink((root_ + "/blk/io.bfq.weight").c_str());
  Run({"--cgroup-root=" + root_, "--name=c", "--filename=" + dir_ + "/c.dat", "--size=1M",
       "--cgroup=blk", "--cgroup_bfq_weight=10"},
      &r);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.stderr_text.find("'" + root_ + "/blk/io.bfq.weight': No such file or directory"),
            std::string::npos)
      << r.stderr_text;
}

TEST_F(FeaturesTest, DeviceTooSmallIsAJobError) {
  RunResult r;
  const Json j = Run({"--name=s", "--filename=/dev/null", "--size=1M"}, &r);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.stderr_text.find("neither a regular file nor a block device"), std::string::npos)
      << r.stderr_text;
  EXPECT_EQ(j["jobs"][0]["error"], EINVAL);
}

TEST_F(FeaturesTest, TrimPunchesHolesInAFile) {
  const std::string file = dir_ + "/trim.dat";
  RunResult r;
  Run({"--name=w", "--filename=" + file, "--size=1M", "--rw=write", "--bs=64k"}, &r);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  struct stat before;
  ASSERT_EQ(stat(file.c_str(), &before), 0);
  const Json j = Run({"--name=t", "--filename=" + file, "--size=1M", "--rw=randtrim", "--bs=64k",
                      "--ioengine=io_uring", "--iodepth=4"},
                     &r);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(j["jobs"][0]["trim"]["total_ios"], 16);
  struct stat after;
  ASSERT_EQ(stat(file.c_str(), &after), 0);
  EXPECT_EQ(after.st_size, before.st_size);
  EXPECT_LT(after.st_blocks, before.st_blocks);
}

}  // namespace
}  // namespace blkgen

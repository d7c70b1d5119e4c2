// End-to-end: runs the built blkgen binary (BLKGEN_BINARY) and Debian's fio
// (BLKGEN_FIO_BINARY) on temporary files and reads both reports with the same
// FioJsonReader.
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fio_json_reader.h"

namespace blkgen {
namespace {

struct RunResult {
  int exit_code = -1;
  std::string stdout_text;
  std::string stderr_text;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `argv` with stdout and stderr captured to files in `dir`.
RunResult RunCommand(const std::vector<std::string>& argv, const std::string& dir) {
  const std::string out = dir + "/stdout", err = dir + "/stderr";
  RunResult r;
  const pid_t pid = fork();
  if (pid == 0) {
    int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(o, 1);
    dup2(e, 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  r.stdout_text = ReadFile(out);
  r.stderr_text = ReadFile(err);
  return r;
}

class E2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "blkgen_e2e_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr) << strerror(errno);
    dir_ = tmpl;
    // O_DIRECT where the temp file system takes it (tmpfs before 6.6 does not).
    const std::string probe = dir_ + "/probe";
    const int fd = open(probe.c_str(), O_CREAT | O_RDWR | O_DIRECT, 0644);
    direct_ = fd >= 0 ? "1" : "0";
    if (fd >= 0) close(fd);
    unlink(probe.c_str());
  }
  void TearDown() override {
    if (!HasFailure()) {
      const std::string cmd = "rm -rf '" + dir_ + "'";
      ASSERT_EQ(system(cmd.c_str()), 0);
    } else {
      std::cerr << "kept " << dir_ << "\n";
    }
  }

  // The shared job: a 1 s io_uring random read and a 16 MiB sequential write.
  std::vector<std::string> JobArgs() const {
    return {"--ioengine=io_uring",
            "--size=16M",
            "--direct=" + direct_,
            "--name=rr",
            "--filename=" + dir_ + "/rr.dat",
            "--rw=randread",
            "--bs=4k",
            "--iodepth=8",
            "--runtime=1",
            "--time_based",
            "--name=w",
            "--filename=" + dir_ + "/w.dat",
            "--rw=write",
            "--bs=64k",
            "--iodepth=4"};
  }

  FioReport RunAndRead(const std::string& binary, const std::string& output,
                       FioJsonReader* reader) {
    std::vector<std::string> argv = {binary, "--output-format=json", "--output=" + output};
    for (const std::string& a : JobArgs()) argv.push_back(a);
    const RunResult r = RunCommand(argv, dir_);
    EXPECT_EQ(r.exit_code, 0) << binary << " stderr: " << r.stderr_text;
    FioReport report;
    std::string error;
    EXPECT_TRUE(reader->Read(ReadFile(output), &report, &error)) << binary << ": " << error;
    return report;
  }

  std::string dir_;
  std::string direct_;
};

// Units agree between the fields of one report (fio's definitions).
void ExpectConsistentUnits(const FioReport& report, const char* who) {
  SCOPED_TRACE(who);
  for (const FioJob& job : report.jobs) {
    for (const FioDir& d : job.dir) {
      EXPECT_EQ(d.io_kbytes, d.io_bytes / 1024);
      EXPECT_NEAR(static_cast<double>(d.bw_kib), d.bw_bytes / 1024.0, 1.0);
      if (d.total_ios == 0) continue;
      // bw_bytes is bytes/s and iops I/O per s over "runtime" ms (blkgen
      // divides by the runtime in ns, so allow for "runtime" being rounded).
      ASSERT_GT(d.runtime_ms, 0u);
      const double fastest = 1000.0 / (d.runtime_ms - 0.5);
      const double slowest = 1000.0 / (d.runtime_ms + 0.5);
      EXPECT_GE(d.bw_bytes, d.io_bytes * slowest - 1);
      EXPECT_LE(d.bw_bytes, d.io_bytes * fastest + 1);
      EXPECT_GE(d.iops, d.total_ios * slowest - 1e-6);
      EXPECT_LE(d.iops, d.total_ios * fastest + 1e-6);
      // Latencies are ns: a mean between min and max, clat within lat.
      EXPECT_LE(d.clat.min, d.clat.mean);
      EXPECT_LE(d.clat.mean, d.clat.max);
      EXPECT_LE(d.clat.mean, d.lat.mean);
      EXPECT_EQ(d.clat.n, d.total_ios);
      EXPECT_EQ(d.clat.percentile.size(), 17u);
      for (const auto& [key, ns] : d.clat.percentile) {
        EXPECT_GE(ns, d.clat.min * (1 - 1.0 / 128) - 1) << key;
        EXPECT_LE(ns, d.clat.max * (1 + 1.0 / 128) + 1) << key;
      }
    }
  }
}

TEST_F(E2eTest, BlkgenJsonHasFioKeysAndTypes) {
  FioJsonReader reader;
  const FioReport report = RunAndRead(BLKGEN_BINARY, dir_ + "/blkgen.json", &reader);
  ASSERT_EQ(report.jobs.size(), 2u);
  EXPECT_EQ(report.version, "blkgen-0.1");
  EXPECT_EQ(report.global_options.at("ioengine"), "io_uring");
  EXPECT_EQ(report.global_options.at("size"), "16M");

  const FioJob& rr = report.jobs[0];
  EXPECT_EQ(rr.jobname, "rr");
  EXPECT_EQ(rr.error, 0u);
  EXPECT_EQ(rr.job_options.at("rw"), "randread");
  EXPECT_EQ(rr.job_options.count("time_based"), 0u);  // flag without value, as fio
  EXPECT_GT(rr.dir[0].total_ios, 1000u);
  EXPECT_GE(rr.dir[0].runtime_ms, 1000u);
  EXPECT_LT(rr.dir[0].runtime_ms, 1500u);
  EXPECT_GT(rr.dir[0].slat.n, 0u);  // async engine: slat recorded
  EXPECT_EQ(rr.dir[1].total_ios, 0u);
  EXPECT_GE(rr.dir[0].bw_samples, 1u);
  EXPECT_GT(rr.ctx + rr.minf, 0u);

  const FioJob& w = report.jobs[1];
  EXPECT_EQ(w.jobname, "w");
  EXPECT_EQ(w.error, 0u);
  EXPECT_EQ(w.dir[1].io_bytes, 16u << 20);  // one pass over size
  EXPECT_EQ(w.dir[1].total_ios, 256u);
  EXPECT_EQ(w.dir[1].short_ios, 0u);
  ExpectConsistentUnits(report, "blkgen");
}

TEST_F(E2eTest, SameReaderWorksOnRealFio) {
  if (access(BLKGEN_FIO_BINARY, X_OK) != 0) GTEST_SKIP() << "no " << BLKGEN_FIO_BINARY;
  FioJsonReader fio_reader, blkgen_reader;
  const FioReport fio = RunAndRead(BLKGEN_FIO_BINARY, dir_ + "/fio.json", &fio_reader);
  const FioReport blkgen = RunAndRead(BLKGEN_BINARY, dir_ + "/blkgen.json", &blkgen_reader);
  ASSERT_EQ(fio.jobs.size(), 2u);
  ASSERT_EQ(blkgen.jobs.size(), 2u);
  ExpectConsistentUnits(fio, "fio");
  ExpectConsistentUnits(blkgen, "blkgen");
  // Every key the reader used exists in both reports with the same type.
  EXPECT_GT(blkgen_reader.used().size(), 100u);
  for (const auto& [key, type] : blkgen_reader.used()) {
    auto it = fio_reader.used().find(key);
    if (it == fio_reader.used().end()) {
      ADD_FAILURE() << "fio's report has no " << key;
    } else {
      EXPECT_EQ(it->second, type) << key;
    }
  }
  EXPECT_EQ(fio_reader.used().size(), blkgen_reader.used().size());
  // Same job, same amounts where the job fixes them.
  EXPECT_EQ(fio.jobs[1].dir[1].io_bytes, blkgen.jobs[1].dir[1].io_bytes);
  EXPECT_EQ(fio.jobs[1].dir[1].total_ios, blkgen.jobs[1].dir[1].total_ios);
  EXPECT_EQ(fio.jobs[0].job_options, blkgen.jobs[0].job_options);
}

TEST_F(E2eTest, PsyncJobHasNoSlat) {
  const std::string out = dir_ + "/psync.json";
  const RunResult r = RunCommand(
      {BLKGEN_BINARY, "--output-format=json", "--output=" + out, "--name=p",
       "--filename=" + dir_ + "/p.dat", "--size=4M", "--rw=randwrite", "--ioengine=psync"},
      dir_);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  FioJsonReader reader;
  FioReport report;
  std::string error;
  ASSERT_TRUE(reader.Read(ReadFile(out), &report, &error)) << error;
  const FioDir& w = report.jobs[0].dir[1];
  EXPECT_EQ(w.total_ios, 1024u);
  EXPECT_EQ(w.slat.n, 0u);
  EXPECT_EQ(w.clat.n, 1024u);
}

TEST_F(E2eTest, NormalOutputByDefault) {
  const RunResult r = RunCommand(
      {BLKGEN_BINARY, "--name=n", "--filename=" + dir_ + "/n.dat", "--size=1M", "--rw=read"}, dir_);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("Starting 1 process"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("read: IOPS="), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("Run status group 0"), std::string::npos) << r.stdout_text;
}

TEST_F(E2eTest, UnknownOptionExitsWithTwo) {
  const RunResult r = RunCommand({BLKGEN_BINARY, "--name=x", "--bogus_opt=3"}, dir_);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stderr_text.find("bogus_opt"), std::string::npos) << r.stderr_text;
  EXPECT_TRUE(r.stdout_text.empty());
}

TEST_F(E2eTest, OpenFailureReportsErrnoAndStillWritesJson) {
  const std::string out = dir_ + "/fail.json";
  const RunResult r =
      RunCommand({BLKGEN_BINARY, "--output-format=json", "--output=" + out, "--name=bad",
                  "--filename=" + dir_ + "/no/such/dir/f", "--size=1M", "--name=good",
                  "--filename=" + dir_ + "/g.dat", "--size=1M"},
                 dir_);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.stderr_text.find("No such file or directory"), std::string::npos) << r.stderr_text;
  FioJsonReader reader;
  FioReport report;
  std::string error;
  ASSERT_TRUE(reader.Read(ReadFile(out), &report, &error)) << error;
  ASSERT_EQ(report.jobs.size(), 2u);
  EXPECT_EQ(report.jobs[0].error, static_cast<uint64_t>(ENOENT));
  EXPECT_EQ(report.jobs[1].error, 0u);
  EXPECT_EQ(report.jobs[1].dir[0].io_bytes, 1u << 20);
}

}  // namespace
}  // namespace blkgen

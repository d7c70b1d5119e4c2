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

#include "e2e_util.h"
#include "fio_json_reader.h"

namespace blkgen {
namespace {

class FioComparisonTest : public E2eTest {
 protected:
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
    return RunAndRead(binary, output, reader, JobArgs());
  }
  FioReport RunAndRead(const std::string& binary, const std::string& output, FioJsonReader* reader,
                       const std::vector<std::string>& args) {
    std::vector<std::string> argv = {binary, "--output-format=json", "--output=" + output};
    for (const std::string& a : args) argv.push_back(a);
    const RunResult r = RunCommand(argv, dir_);
    EXPECT_EQ(r.exit_code, 0) << binary << " stderr: " << r.stderr_text;
    FioReport report;
    std::string error;
    EXPECT_TRUE(reader->Read(ReadFile(output), &report, &error)) << binary << ": " << error;
    return report;
  }
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

TEST_F(FioComparisonTest, BlkgenJsonHasFioKeysAndTypes) {
  FioJsonReader reader;
  const FioReport report = RunAndRead(BLKGEN_BINARY, dir_ + "/blkgen.json", &reader);
  ASSERT_EQ(report.jobs.size(), 2u);
  EXPECT_EQ(report.version.rfind("blkgen-", 0), 0u);
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

// Every key the reader used on blkgen's report exists in fio's with the same
// type, and the other way round.
void ExpectSameKeys(const FioJsonReader& fio_reader, const FioJsonReader& blkgen_reader) {
  for (const auto& [key, type] : blkgen_reader.used()) {
    auto it = fio_reader.used().find(key);
    if (it == fio_reader.used().end()) {
      ADD_FAILURE() << "fio's report has no " << key;
    } else {
      EXPECT_EQ(it->second, type) << key;
    }
  }
  for (const auto& [key, type] : fio_reader.used()) {
    EXPECT_TRUE(blkgen_reader.used().count(key)) << "blkgen's report has no " << key;
  }
}

TEST_F(FioComparisonTest, SameReaderWorksOnRealFio) {
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
  ExpectSameKeys(fio_reader, blkgen_reader);
  // Same job, same amounts where the job fixes them.
  EXPECT_EQ(fio.jobs[1].dir[1].io_bytes, blkgen.jobs[1].dir[1].io_bytes);
  EXPECT_EQ(fio.jobs[1].dir[1].total_ios, blkgen.jobs[1].dir[1].total_ios);
  EXPECT_EQ(fio.jobs[0].job_options, blkgen.jobs[0].job_options);
}

TEST_F(FioComparisonTest, RandrwWithClonesMatchesFio) {
  if (access(BLKGEN_FIO_BINARY, X_OK) != 0) GTEST_SKIP() << "no " << BLKGEN_FIO_BINARY;
  const std::vector<std::string> args = {"--name=mix",     "--filename=" + dir_ + "/mix.dat",
                                         "--size=8M",      "--rw=randrw",
                                         "--rwmixread=70", "--bs=4k",
                                         "--numjobs=2",    "--ioengine=libaio",
                                         "--iodepth=4",    "--direct=" + direct_,
                                         "--fsync=64"};
  FioJsonReader fio_reader, blkgen_reader;
  const FioReport fio = RunAndRead(BLKGEN_FIO_BINARY, dir_ + "/fio.json", &fio_reader, args);
  const FioReport blkgen = RunAndRead(BLKGEN_BINARY, dir_ + "/blkgen.json", &blkgen_reader, args);
  ExpectConsistentUnits(fio, "fio");
  ExpectConsistentUnits(blkgen, "blkgen");
  ExpectSameKeys(fio_reader, blkgen_reader);
  ASSERT_EQ(fio.jobs.size(), 2u);
  ASSERT_EQ(blkgen.jobs.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(blkgen.jobs[i].jobname, fio.jobs[i].jobname);  // clones keep the name
    EXPECT_EQ(blkgen.jobs[i].job_options, fio.jobs[i].job_options);
    // As fio, `size` bounds reads and writes together.
    EXPECT_EQ(blkgen.jobs[i].dir[0].io_bytes + blkgen.jobs[i].dir[1].io_bytes, 8u << 20);
    EXPECT_EQ(fio.jobs[i].dir[0].io_bytes + fio.jobs[i].dir[1].io_bytes, 8u << 20);
    const double read_share = blkgen.jobs[i].dir[0].total_ios / 2048.0;
    EXPECT_NEAR(read_share, 0.7, 0.05);
    // fsync after every 64 writes (when another I/O follows). fio 3.33 with
    // an async engine may issue several syncs at one such point; blkgen one.
    const uint64_t writes = blkgen.jobs[i].dir[1].total_ios;
    EXPECT_GE(blkgen.jobs[i].sync_ios + 1, writes / 64);
    EXPECT_LE(blkgen.jobs[i].sync_ios, writes / 64);
    EXPECT_GE(fio.jobs[i].sync_ios + 1, fio.jobs[i].dir[1].total_ios / 64);
  }
}

TEST_F(FioComparisonTest, GroupReportingMergesLikeFio) {
  if (access(BLKGEN_FIO_BINARY, X_OK) != 0) GTEST_SKIP() << "no " << BLKGEN_FIO_BINARY;
  const std::vector<std::string> args = {"--name=g",
                                         "--filename=" + dir_ + "/g.dat",
                                         "--size=4M",
                                         "--rw=randread",
                                         "--numjobs=3",
                                         "--group_reporting",
                                         "--ioengine=io_uring",
                                         "--iodepth=2"};
  FioJsonReader fio_reader, blkgen_reader;
  const FioReport fio = RunAndRead(BLKGEN_FIO_BINARY, dir_ + "/fio.json", &fio_reader, args);
  const FioReport blkgen = RunAndRead(BLKGEN_BINARY, dir_ + "/blkgen.json", &blkgen_reader, args);
  ExpectSameKeys(fio_reader, blkgen_reader);
  ASSERT_EQ(fio.jobs.size(), 1u);
  ASSERT_EQ(blkgen.jobs.size(), 1u);
  EXPECT_EQ(blkgen.jobs[0].dir[0].io_bytes, fio.jobs[0].dir[0].io_bytes);  // 3 x 4 MiB
  EXPECT_EQ(blkgen.jobs[0].dir[0].total_ios, fio.jobs[0].dir[0].total_ios);
  EXPECT_EQ(blkgen.jobs[0].dir[0].clat.n, 3u * 1024);
}

TEST_F(FioComparisonTest, SameJobFileSameJobs) {
  if (access(BLKGEN_FIO_BINARY, X_OK) != 0) GTEST_SKIP() << "no " << BLKGEN_FIO_BINARY;
  const std::string job_file = dir_ + "/jobs.fio";
  std::ofstream(job_file) << "; blkgen and fio read the same file\n"
                          << "[global]\n"
                          << "filename=" << dir_ << "/jf.dat\n"
                          << "size=${JF_SIZE}\n"
                          << "ioengine=io_uring\n"
                          << "[seq]\n"
                          << "rw=write\n"
                          << "bs=64k\n"
                          << "[rand]\n"
                          << "rw=randread\n"
                          << "iodepth=4\n";
  setenv("JF_SIZE", "4M", 1);
  FioJsonReader fio_reader, blkgen_reader;
  const FioReport fio = RunAndRead(BLKGEN_FIO_BINARY, dir_ + "/fio.json", &fio_reader, {job_file});
  const FioReport blkgen =
      RunAndRead(BLKGEN_BINARY, dir_ + "/blkgen.json", &blkgen_reader, {job_file});
  ExpectSameKeys(fio_reader, blkgen_reader);
  ASSERT_EQ(blkgen.jobs.size(), 2u);
  ASSERT_EQ(fio.jobs.size(), 2u);
  EXPECT_EQ(blkgen.global_options, fio.global_options);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(blkgen.jobs[i].jobname, fio.jobs[i].jobname);
    EXPECT_EQ(blkgen.jobs[i].job_options, fio.jobs[i].job_options);
    for (int d = 0; d < 2; ++d) {
      EXPECT_EQ(blkgen.jobs[i].dir[d].io_bytes, fio.jobs[i].dir[d].io_bytes) << i << " " << d;
      EXPECT_EQ(blkgen.jobs[i].dir[d].total_ios, fio.jobs[i].dir[d].total_ios) << i << " " << d;
    }
  }
  // Both report the same disks (the temp dir's), if any.
  ASSERT_EQ(blkgen.disk_util.size(), fio.disk_util.size());
  for (size_t i = 0; i < fio.disk_util.size(); ++i) {
    EXPECT_EQ(blkgen.disk_util[i].name, fio.disk_util[i].name);
  }
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

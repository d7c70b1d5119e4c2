// End-to-end tests of blkgen's own features, running the built binary
// (BLKGEN_BINARY) on temporary files: verify finds injected corruption,
// the I/O sequence is the same across runs and engines, cgroup files are
// written (against a directory standing in for the cgroup root), time
// series and error reporting.
#include <fcntl.h>
#include <cerrno>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
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

// Writes past RLIMIT_FSIZE fail with EFBIG (SIGXFSZ ignored): an I/O error
// at completion, as a device's media error is. dash's ulimit -f counts 512
// bytes, so 32 lets the first 16 KiB (4 blocks) of the 64 KiB file through.
TEST_F(FeaturesTest, ContinueOnErrorCountsTheFailedIosAndGoesOn) {
  const std::string file = dir_ + "/e.dat";
  std::ofstream(file) << std::string(65536, 'x');
  const std::string report = dir_ + "/report.json";
  for (const std::string engine : {"psync", "io_uring"}) {
    for (const bool go_on : {true, false}) {
      const std::string cmd =
          "trap '' XFSZ; ulimit -f 32; exec " + std::string(BLKGEN_BINARY) +
          " --output-format=json --output=" + report + " --name=w --filename=" + file +
          " --size=64k --rw=write --bs=4k --iodepth=4 --ioengine=" + engine +
          (go_on ? " --continue_on_error=write" : "");
      const RunResult r = RunCommand({"/bin/sh", "-c", cmd}, dir_);
      const Json j = Json::parse(ReadFile(report))["jobs"][0];
      if (go_on) {
        EXPECT_EQ(r.exit_code, 0) << engine << r.stderr_text;
        EXPECT_EQ(j["total_err"], 12) << engine;
        EXPECT_EQ(j["first_error"], EFBIG) << engine;
        EXPECT_EQ(j["error"], 0) << engine;
        EXPECT_EQ(j["write"]["total_ios"], 4) << engine;  // the failed ones are not I/Os
      } else {
        EXPECT_EQ(r.exit_code, 1) << engine;
        EXPECT_EQ(j["error"], EFBIG) << engine;
        EXPECT_FALSE(j.contains("total_err")) << engine;  // as fio: only when asked
      }
    }
  }
}

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

// The I/Os of an iolog in issue order: action ("read", "write", "trim",
// "sync", ...) and offset; header and file lines left out.
struct LoggedIo {
  std::string action;
  uint64_t offset = 0;
};
std::vector<LoggedIo> LoggedIos(const std::string& path) {
  std::vector<LoggedIo> ios;
  for (const std::string& line : IologLines(path)) {
    std::istringstream in(line);
    std::string file;
    LoggedIo io;
    if (line.rfind("fio version", 0) == 0) continue;
    if (in >> file >> io.action >> io.offset) ios.push_back(io);
  }
  return ios;
}

bool IsDataAction(const std::string& a) { return a == "read" || a == "write" || a == "trim"; }

// What the verify table should say after the logged I/Os (per block offset:
// written since, trimmed since the last write), and how a job with verify
// should count the reads among them. I/Os to one block never overlap, so a
// read sees the state left by the I/Os to its block logged before it.
struct ExpectedVerify {
  uint64_t checked = 0, unchecked = 0, trimmed_checked = 0;
  std::map<uint64_t, int> writes;    // per block: writes
  std::map<uint64_t, bool> trimmed;  // per block: trimmed since its last write
};
ExpectedVerify ReplayLog(const std::vector<LoggedIo>& ios) {
  ExpectedVerify e;
  for (const LoggedIo& io : ios) {
    if (io.action == "write") {
      ++e.writes[io.offset];
      e.trimmed[io.offset] = false;
    } else if (io.action == "trim") {
      e.trimmed[io.offset] = true;
    } else if (io.action == "read") {
      if (e.writes.count(io.offset) == 0) {
        ++e.unchecked;
        continue;
      }
      ++e.checked;
      if (e.trimmed[io.offset]) ++e.trimmed_checked;
    }
  }
  return e;
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

// A verify job that reads, writes, trims some of what it wrote and syncs,
// three passes over its region: trims of the blocks it picked, syncs every
// 32 writes, and every read (both phases) checked against what the I/O log
// says the block held, trimmed ones included (a file's punched hole reads
// as zeros).
TEST_F(FeaturesTest, VerifyWithTrimsAndSyncsChecksEveryBlockItTouched) {
  const std::string log = dir_ + "/trim.log";
  RunResult r;
  const Json j =
      Run({"--name=m", "--filename=" + dir_ + "/m.dat", "--size=2M", "--io_size=6M", "--rw=randrw",
           "--rwmixread=20", "--bs=4k", "--ioengine=io_uring", "--iodepth=16", "--verify=crc32c",
           "--trim_percentage=25", "--trim_backlog=16", "--fsync=32", "--direct=" + direct_,
           "--write_iolog=" + log},
          &r);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const Json& job = j["jobs"][0];
  const uint64_t writes = job["write"]["total_ios"], trims = job["trim"]["total_ios"],
                 reads = job["read"]["total_ios"];
  EXPECT_EQ(reads + writes + trims, 1536u);  // io_size / bs
  // About a quarter of the writes picked; every one trimmed but the last
  // batch's leftovers.
  EXPECT_GT(trims, writes * 20 / 100);
  EXPECT_LT(trims, writes * 30 / 100);
  EXPECT_GE(job["sync"]["total_ios"].get<uint64_t>(), writes / 32 - 1);
  EXPECT_LE(job["sync"]["total_ios"].get<uint64_t>(), writes / 32);

  const std::vector<LoggedIo> ios = LoggedIos(log);
  const ExpectedVerify e = ReplayLog(ios);
  EXPECT_GT(e.writes.size(), 400u);  // of 512 blocks
  const Json& v = job["blkgen"]["verify"];
  EXPECT_EQ(v["mismatches"], 0);
  EXPECT_EQ(v["verify_phase_reads"], e.writes.size());  // every block written
  EXPECT_EQ(v["checked"], e.checked);                   // main-phase reads and the verify phase
  EXPECT_EQ(v["unchecked"], e.unchecked);
  EXPECT_GT(e.trimmed_checked, 50u);
  EXPECT_EQ(v["trimmed"]["checked"], e.trimmed_checked);
  EXPECT_EQ(v["trimmed"]["zeros"], e.trimmed_checked);
  EXPECT_EQ(v["trimmed"]["unchanged"], 0);
  EXPECT_EQ(job["blkgen"]["settings"]["trim_backlog_batch"], 16);  // 0 = trim_backlog
}

// Which blocks get trimmed comes from the seed, not from completions: the
// same log on every engine.
TEST_F(FeaturesTest, TrimsOfAVerifyJobAreTheSameAcrossEngines) {
  std::vector<std::vector<std::string>> logs;
  for (const char* engine : {"psync", "io_uring", "libaio"}) {
    const std::string log = dir_ + "/" + engine + ".log";
    RunResult r;
    Run({"--name=t", "--filename=" + dir_ + "/t.dat", "--size=1M", "--io_size=3M", "--rw=randwrite",
         "--bs=4k", "--ioengine=" + std::string(engine), "--iodepth=8", "--verify=crc32c",
         "--trim_percentage=40", "--trim_backlog=8", "--trim_backlog_batch=2", "--fsync=16",
         "--randseed=77", "--write_iolog=" + log},
        &r);
    ASSERT_EQ(r.exit_code, 0) << engine << ": " << r.stderr_text;
    logs.push_back(IologLines(log));
  }
  size_t trims = 0;
  for (const std::string& l : logs[0]) trims += l.find(" trim ") != std::string::npos;
  EXPECT_GT(trims, 50u);
  EXPECT_EQ(logs[1], logs[0]);
  EXPECT_EQ(logs[2], logs[0]);
}

// verify_only: a second run issues nothing, replays the sequence and checks
// what the first left, trimmed blocks included.
TEST_F(FeaturesTest, VerifyOnlyChecksWhatAnEarlierRunLeft) {
  const std::string file = dir_ + "/o.dat";
  const std::vector<std::string> job = {"--name=o",          "--filename=" + file,
                                        "--size=1M",         "--io_size=2M",
                                        "--rw=randwrite",    "--bs=4k",
                                        "--ioengine=libaio", "--iodepth=4",
                                        "--verify=crc32c",   "--trim_percentage=30",
                                        "--trim_backlog=8",  "--randseed=5"};
  RunResult r;
  std::vector<std::string> args = job;
  args.push_back("--do_verify=0");
  args.push_back("--write_iolog=" + dir_ + "/first.log");
  Run(args, &r);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const ExpectedVerify e = ReplayLog(LoggedIos(dir_ + "/first.log"));
  uint64_t trimmed_now = 0;
  for (const auto& [offset, t] : e.trimmed) trimmed_now += t;

  args = job;
  args.push_back("--verify_only");
  args.push_back("--write_iolog=" + dir_ + "/second.log");
  const Json j = Run(args, &r);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const Json& v = j["jobs"][0]["blkgen"]["verify"];
  EXPECT_EQ(v["mismatches"], 0);
  EXPECT_EQ(v["verify_phase_reads"], e.writes.size());
  EXPECT_EQ(v["trimmed"]["checked"], trimmed_now);
  EXPECT_GT(trimmed_now, 20u);
  EXPECT_EQ(j["jobs"][0]["write"]["total_ios"], 0);
  EXPECT_EQ(j["jobs"][0]["trim"]["total_ios"], 0);
  for (const LoggedIo& io : LoggedIos(dir_ + "/second.log")) EXPECT_EQ(io.action, "read");
}

// Injected corruption in the mixed write/trim mode. A first run writes and
// trims; blocks are then overwritten with what earlier prefixes of the same
// sequence (io_size cut short, so the same I/Os up to there) left in them:
//  - a trimmed block with its content from just before its trim (what a
//    device that ignores the trim returns): passes with trim_verify_zero=0,
//    fails with 1;
//  - a trimmed block with an older write of it (a stale block): fails;
//  - a trimmed block with garbage, a written block with one flipped byte:
//    fail.
// verify_only then checks the file.
TEST_F(FeaturesTest, VerifyFindsCorruptionOfTrimmedAndWrittenBlocks) {
  const std::string file = dir_ + "/x.dat";
  const std::vector<std::string> job = {
      "--name=x",        "--size=1M",       "--rw=randwrite",       "--bs=4k",
      "--verify=crc32c", "--do_verify=0",   "--trim_percentage=30", "--trim_backlog=8",
      "--randseed=9",    "--ioengine=psync"};
  auto run_prefix = [&](const std::string& target, uint64_t data_ios, const std::string& log) {
    std::vector<std::string> args = job;
    args.push_back("--filename=" + target);
    args.push_back("--io_size=" + std::to_string(data_ios * 4096));
    if (!log.empty()) args.push_back("--write_iolog=" + log);
    RunResult r;
    Run(args, &r);
    ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  };
  // 500 data I/Os over 256 blocks: a pass and a half of writes, a quarter
  // as many trims.
  run_prefix(file, 500, dir_ + "/x.log");
  const std::vector<LoggedIo> ios = LoggedIos(dir_ + "/x.log");

  // Per block: indexes (in data I/Os) of its writes and of its last trim.
  std::map<uint64_t, std::vector<uint64_t>> writes_at;
  std::map<uint64_t, uint64_t> trim_at;
  uint64_t n = 0;
  for (const LoggedIo& io : ios) {
    if (!IsDataAction(io.action)) continue;
    if (io.action == "write") {
      writes_at[io.offset].push_back(n);
      trim_at.erase(io.offset);
    } else if (io.action == "trim") {
      trim_at[io.offset] = n;
    }
    ++n;
  }
  ASSERT_EQ(n, 500u);
  // Trimmed at the end: one written once (kept: restored), one written
  // twice (stale: its first write restored), one for garbage; and a
  // written one.
  uint64_t kept = UINT64_MAX, stale = UINT64_MAX, garbage = UINT64_MAX, flipped = UINT64_MAX;
  for (const auto& [offset, at] : trim_at) {
    const size_t w = writes_at[offset].size();
    if (w == 1 && kept == UINT64_MAX) {
      kept = offset;
    } else if (w >= 2 && stale == UINT64_MAX) {
      stale = offset;
    } else if (garbage == UINT64_MAX) {
      garbage = offset;
    }
  }
  for (const auto& [offset, at] : writes_at) {
    if (trim_at.count(offset) == 0) {
      flipped = offset;
      break;
    }
  }
  ASSERT_NE(kept, UINT64_MAX);
  ASSERT_NE(stale, UINT64_MAX);
  ASSERT_NE(garbage, UINT64_MAX);
  ASSERT_NE(flipped, UINT64_MAX);

  // The blocks as the sequence left them just before `kept`'s trim and just
  // after `stale`'s first write.
  const std::string before_trim = dir_ + "/before_trim.dat";
  const std::string first_write = dir_ + "/first_write.dat";
  run_prefix(before_trim, trim_at[kept], "");
  run_prefix(first_write, writes_at[stale][0] + 1, "");
  ASSERT_EQ(Peek(file, kept, 4096), std::string(4096, '\0'));  // the hole
  Poke(file, kept, Peek(before_trim, kept, 4096));
  Poke(file, stale, Peek(first_write, stale, 4096));
  Poke(file, garbage, std::string(4096, '\x5a'));
  const std::string byte = Peek(file, flipped + 3000, 1);
  Poke(file, flipped + 3000, std::string(1, static_cast<char>(byte[0] ^ 0x08)));

  for (const bool zero : {false, true}) {
    SCOPED_TRACE(zero ? "trim_verify_zero=1" : "trim_verify_zero=0");
    std::vector<std::string> args = job;
    args.push_back("--filename=" + file);
    args.push_back("--io_size=" + std::to_string(500 * 4096));
    args.push_back("--verify_only");
    args.push_back(zero ? "--trim_verify_zero=1" : "--trim_verify_zero=0");
    RunResult r;
    const Json j = Run(args, &r);
    EXPECT_EQ(r.exit_code, 1);
    const Json& v = j["jobs"][0]["blkgen"]["verify"];
    EXPECT_EQ(j["jobs"][0]["error"], EILSEQ);
    EXPECT_EQ(v["trimmed"]["checked"], trim_at.size());
    EXPECT_EQ(v["trimmed"]["zeros"], trim_at.size() - 3);
    EXPECT_EQ(v["trimmed"]["unchanged"], 1);  // `kept`, counted either way
    EXPECT_EQ(v["mismatches"], zero ? 4 : 3);
    std::map<uint64_t, bool> found;  // offset -> recorded as a trimmed block
    for (const Json& m : v["first_mismatches"]) {
      found[m["offset"].get<uint64_t>()] = m["trimmed"].get<bool>();
    }
    EXPECT_EQ(found.count(kept), zero ? 1u : 0u);
    ASSERT_EQ(found.count(stale), 1u);
    EXPECT_TRUE(found[stale]);
    ASSERT_EQ(found.count(garbage), 1u);
    EXPECT_TRUE(found[garbage]);
    ASSERT_EQ(found.count(flipped), 1u);
    EXPECT_FALSE(found[flipped]);
    for (const Json& m : v["first_mismatches"]) {
      if (m["offset"] != stale) continue;
      // Expected: the generation written last before the trim; found: the first.
      EXPECT_EQ(m["found"]["offset"], stale);
      EXPECT_LT(m["found"]["generation"].get<uint64_t>(),
                m["expected"]["generation"].get<uint64_t>());
    }
    EXPECT_NE(r.stderr_text.find("verify mismatch at offset " + std::to_string(garbage) +
                                 ": trimmed block, expected zeros"),
              std::string::npos)
        << r.stderr_text;
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

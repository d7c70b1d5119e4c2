// Replay end to end on the host: fio records an iolog (version 3, with
// timestamps), blkgen and fio replay it, and both issue the recorded I/Os in
// the recorded order (fio cannot write an iolog while it replays one: its
// JSON counts are compared). Timing on a shared host is not checked here (wake-ups
// there are late by milliseconds under load); tests/e2e/test_replay.py
// checks it in virtual time.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "e2e_util.h"

namespace blkgen {
namespace {

using Json = nlohmann::json;

struct Io {
  std::string action;
  uint64_t offset = 0;
  uint64_t length = 0;
  bool operator==(const Io&) const = default;
};
void PrintTo(const Io& io, std::ostream* os) {
  *os << io.action << " " << io.offset << " " << io.length;
}

// The data and sync I/Os of an iolog (v2 or v3), in order.
std::vector<Io> Ios(const std::string& path) {
  std::vector<Io> ios;
  std::ifstream in(path);
  std::string line;
  int version = 0;
  while (std::getline(in, line)) {
    if (line.rfind("fio version ", 0) == 0) {
      version = line[12] - '0';
      continue;
    }
    std::istringstream ss(line);
    std::string ts, file;
    Io io;
    if (version == 3) ss >> ts;
    if (!(ss >> file >> io.action)) continue;
    if (io.action == "add" || io.action == "open" || io.action == "close") continue;
    ss >> io.offset >> io.length;
    // fio logs a sync with the offset and length of the I/O before it.
    if (io.action == "sync" || io.action == "datasync") io.offset = io.length = 0;
    ios.push_back(io);
  }
  return ios;
}

class ReplayE2eTest : public E2eTest {};

TEST_F(ReplayE2eTest, BlkgenAndFioReplayTheIosFioRecorded) {
  if (access(BLKGEN_FIO_BINARY, X_OK) != 0) GTEST_SKIP() << "no " BLKGEN_FIO_BINARY;
  const std::string data = dir_ + "/data", recorded = dir_ + "/recorded.log";
  RunResult r = RunCommand({BLKGEN_FIO_BINARY, "--name=rec", "--filename=" + data, "--size=4M",
                            "--rw=randrw", "--bs=4k", "--fsync=5", "--number_ios=60",
                            "--rate_iops=2000", "--write_iolog=" + recorded},
                           dir_);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const std::vector<Io> want = Ios(recorded);
  ASSERT_GE(want.size(), 60u);

  const std::string by_blkgen = dir_ + "/blkgen.log", by_fio = dir_ + "/fio.log";
  r = RunCommand({BLKGEN_BINARY, "--name=rep", "--filename=" + data, "--read_iolog=" + recorded,
                  "--ioengine=io_uring", "--iodepth=4", "--write_iolog=" + by_blkgen,
                  "--output-format=json", "--output=" + dir_ + "/blkgen.json"},
                 dir_);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(Ios(by_blkgen), want);
  const Json j = Json::parse(ReadFile(dir_ + "/blkgen.json"));
  const Json& rep = j["jobs"][0]["blkgen"]["replay"];
  EXPECT_EQ(rep["format"], "fio iolog v3");
  EXPECT_EQ(rep["ios"].get<size_t>(), want.size());

  r = RunCommand({BLKGEN_FIO_BINARY, "--name=rep", "--read_iolog=" + recorded,
                  "--replay_redirect=" + data, "--ioengine=io_uring", "--iodepth=4",
                  "--output-format=json", "--output=" + dir_ + "/fio.json"},
                 dir_);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const Json f = Json::parse(ReadFile(dir_ + "/fio.json"));
  for (const char* dir : {"read", "write"}) {
    uint64_t ios = 0, bytes = 0;
    for (const Io& io : want) {
      if (io.action != dir) continue;
      ++ios;
      bytes += io.length;
    }
    EXPECT_EQ(f["jobs"][0][dir]["total_ios"].get<uint64_t>(), ios) << dir;
    EXPECT_EQ(j["jobs"][0][dir]["total_ios"].get<uint64_t>(), ios) << dir;
    EXPECT_EQ(j["jobs"][0][dir]["io_bytes"].get<uint64_t>(), bytes) << dir;
  }
}

TEST_F(ReplayE2eTest, ABadTraceIsAUsageErrorNamingFileAndOffset) {
  const std::string bad = dir_ + "/bad.log";
  const std::string good_lines = "fio version 3 iolog\n0 f read 0 4096\n";
  std::ofstream(bad) << good_lines << "10 f read 4096\n";
  RunResult r = RunCommand(
      {BLKGEN_BINARY, "--name=rep", "--filename=" + dir_ + "/d", "--read_iolog=" + bad}, dir_);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stderr_text.find(bad + ": byte offset " + std::to_string(good_lines.size()) + ": line 3: expected 'read offset length'"),
            std::string::npos)
      << r.stderr_text;
}

TEST_F(ReplayE2eTest, ATraceBeyondTheTargetSaysWhereItReaches) {
  const std::string log = dir_ + "/far.log", data = dir_ + "/small";
  std::ofstream(log) << "fio version 2 iolog\nf read 1048576 4096\n";
  std::ofstream(data) << std::string(65536, 'x');
  RunResult r = RunCommand(
      {BLKGEN_BINARY, "--name=rep", "--filename=" + data, "--read_iolog=" + log}, dir_);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.stderr_text.find("the trace reaches byte 1052672 but '" + data +
                               "' ends at 65536"),
            std::string::npos)
      << r.stderr_text;
}

}  // namespace
}  // namespace blkgen

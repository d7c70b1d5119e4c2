#include "replay.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace blkgen {
namespace {

// blktrace action bits (blktrace_api.h), spelled out here so that the test
// does not share the parser's constants.
constexpr uint32_t kQueue = 1;            // __BLK_TA_QUEUE
constexpr uint32_t kIssue = 7;            // __BLK_TA_ISSUE
constexpr uint32_t kCatRead = 1u << 16;   // BLK_TC_READ << BLK_TC_SHIFT
constexpr uint32_t kCatWrite = 2u << 16;  // BLK_TC_WRITE
constexpr uint32_t kCatFlush = 4u << 16;  // BLK_TC_FLUSH
constexpr uint32_t kCatNotify = 1u << 26;
constexpr uint32_t kCatDiscard = 1u << 29;

struct Rec {
  uint64_t time_ns;
  uint64_t sector;
  uint32_t bytes;
  uint32_t action;
  uint16_t pdu_len = 0;
  uint32_t magic = 0x65617407;
};

template <class T>
void Put(std::string* out, T v, bool big) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  if (big) std::reverse(b, b + sizeof(T));
  out->append(b, sizeof(T));
}

std::string Blktrace(const std::vector<Rec>& recs, bool big = false) {
  std::string out;
  uint32_t seq = 0;
  for (const Rec& r : recs) {
    Put<uint32_t>(&out, r.magic, big);
    Put<uint32_t>(&out, seq++, big);
    Put<uint64_t>(&out, r.time_ns, big);
    Put<uint64_t>(&out, r.sector, big);
    Put<uint32_t>(&out, r.bytes, big);
    Put<uint32_t>(&out, r.action, big);
    Put<uint32_t>(&out, 1234, big);        // pid
    Put<uint32_t>(&out, (259u << 20), big);  // device
    Put<uint32_t>(&out, 0, big);           // cpu
    Put<uint16_t>(&out, 0, big);           // error
    Put<uint16_t>(&out, r.pdu_len, big);
    out.append(r.pdu_len, 'x');
  }
  return out;
}

ReplayTrace MustParseBlktrace(const std::string& bytes, const ReplaySettings& s = {}) {
  ReplayTrace t;
  Status st = ParseBlktrace({{"t.bin", bytes}}, s, &t);
  EXPECT_TRUE(st.ok()) << st.message();
  return t;
}

ReplayTrace MustParseIolog(const std::string& text, const ReplaySettings& s = {}) {
  ReplayTrace t;
  Status st = ParseIolog("t.log", text, s, &t);
  EXPECT_TRUE(st.ok()) << st.message();
  return t;
}

TEST(ReplayIologTest, Version3TimesAreMicrosecondsSinceTheFirstLine) {
  const ReplayTrace t = MustParseIolog(
      "fio version 3 iolog\n"
      "29 /dev/x add\n"
      "184 /dev/x open\n"
      "189 /dev/x read 61440 4096\n"
      "10162 /dev/x write 774144 8192\n"
      "10170 /dev/x sync 0 0\n"
      "43468 /dev/x close\n");
  ASSERT_EQ(t.ios.size(), 3u);
  EXPECT_EQ(t.format, "fio iolog v3");
  EXPECT_EQ(t.ios[0].due_ns, (189 - 29) * 1000u);
  EXPECT_EQ(t.ios[0].op, IoOp::kRead);
  EXPECT_EQ(t.ios[0].offset, 61440u);
  EXPECT_EQ(t.ios[0].length, 4096u);
  EXPECT_EQ(t.ios[1].due_ns, (10162 - 29) * 1000u);
  EXPECT_EQ(t.ios[1].op, IoOp::kWrite);
  EXPECT_EQ(t.ios[2].op, IoOp::kFsync);
  EXPECT_EQ(t.dirs, DirBit(Dir::kRead) | DirBit(Dir::kWrite));
  EXPECT_EQ(t.max_length, 8192u);
  EXPECT_EQ(t.end_offset, 774144u + 8192u);
}

TEST(ReplayIologTest, TimeScaleIsAPercentageOfTheRecordedRate) {
  const std::string log = "fio version 3 iolog\n0 f read 0 512\n1000 f read 512 512\n";
  ReplaySettings twice;
  twice.time_scale = 200;
  EXPECT_EQ(MustParseIolog(log, twice).ios[1].due_ns, 500000u);
  ReplaySettings half;
  half.time_scale = 50;
  EXPECT_EQ(MustParseIolog(log, half).ios[1].due_ns, 2000000u);
  ReplaySettings no_stall;
  no_stall.no_stall = true;
  EXPECT_EQ(MustParseIolog(log, no_stall).ios[1].due_ns, 0u);
}

TEST(ReplayIologTest, Version2WaitsAddUpAndAreNotScaled) {
  ReplaySettings s;
  s.time_scale = 200;  // fio scales timestamps only, not `wait`
  const ReplayTrace t = MustParseIolog(
      "fio version 2 iolog\n/dev/x add\n/dev/x open\n/dev/x read 0 4096\n"
      "/dev/x wait 300 0\n/dev/x trim 8192 4096\n/dev/x wait 200 0\n/dev/x datasync 0 0\n",
      s);
  ASSERT_EQ(t.ios.size(), 3u);
  EXPECT_EQ(t.ios[0].due_ns, 0u);
  EXPECT_EQ(t.ios[1].due_ns, 300000u);
  EXPECT_EQ(t.ios[1].op, IoOp::kTrim);
  EXPECT_EQ(t.ios[2].due_ns, 500000u);
  EXPECT_EQ(t.ios[2].op, IoOp::kFdatasync);
}

TEST(ReplayIologTest, ScaleDividesThenAlignRoundsDown) {
  ReplaySettings s;
  s.scale = 3;
  s.align = 4096;
  const ReplayTrace t = MustParseIolog("fio version 2 iolog\nf read 100000 4096\n", s);
  EXPECT_EQ(t.ios[0].offset, (100000u / 3) / 4096 * 4096);
}

TEST(ReplayIologTest, ErrorsNameTheFileLineAndByteOffset) {
  ReplayTrace t;
  const std::string text = "fio version 3 iolog\n5 f read 0 512\n7 f flip 0 512\n";
  Status s = ParseIolog("c.log", text, {}, &t);
  ASSERT_FALSE(s.ok());
  const size_t third_line = text.find("7 f flip");
  EXPECT_NE(s.message().find("c.log: byte offset " + std::to_string(third_line)),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("line 3"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("unknown action 'flip'"), std::string::npos) << s.message();

  EXPECT_FALSE(ParseIolog("c.log", "fio version 4 iolog\n", {}, &t).ok());
  s = ParseIolog("c.log", "fio version 3 iolog\n9 f read 0 512\n3 f read 0 512\n", {}, &t);
  EXPECT_NE(s.message().find("goes back in time"), std::string::npos) << s.message();
  s = ParseIolog("c.log", "fio version 3 iolog\n9 f wait 10 0\n", {}, &t);
  EXPECT_NE(s.message().find("'wait' is not allowed in version 3"), std::string::npos);
  s = ParseIolog("c.log", "fio version 2 iolog\nf read 0\n", {}, &t);
  EXPECT_NE(s.message().find("line 2"), std::string::npos) << s.message();
  s = ParseIolog("c.log", "fio version 2 iolog\nf add\n", {}, &t);
  EXPECT_NE(s.message().find("no I/O to replay"), std::string::npos) << s.message();
}

TEST(ReplayBlktraceTest, QueueEventsBecomeIosRelativeToTheFirst) {
  const ReplayTrace t = MustParseBlktrace(Blktrace({
      {5000, 0, 0, kQueue | kCatNotify, 12},  // a notify: skipped
      {1000000, 8, 4096, kQueue | kCatRead},
      {1000500, 8, 4096, kIssue | kCatRead},  // not a queue event
      {1250000, 16, 8192, kQueue | kCatWrite},
      {1300000, 32, 4096, kQueue | kCatDiscard | kCatWrite},
      {1400000, 0, 0, kQueue | kCatFlush | kCatWrite},
      {1500000, 64, 0, kQueue | kCatRead},  // zero bytes: skipped, as fio
  }));
  ASSERT_EQ(t.ios.size(), 4u);
  EXPECT_EQ(t.format, "blktrace");
  EXPECT_EQ(t.ios[0].due_ns, 0u);
  EXPECT_EQ(t.ios[0].offset, 8u * 512);
  EXPECT_EQ(t.ios[0].op, IoOp::kRead);
  EXPECT_EQ(t.ios[1].due_ns, 250000u);
  EXPECT_EQ(t.ios[1].op, IoOp::kWrite);
  EXPECT_EQ(t.ios[1].length, 8192u);
  EXPECT_EQ(t.ios[2].op, IoOp::kTrim);
  EXPECT_EQ(t.ios[3].op, IoOp::kFsync);
  EXPECT_EQ(t.ios[3].due_ns, 400000u);
  EXPECT_FALSE(t.big_endian);
}

TEST(ReplayBlktraceTest, BigEndianRecordsAreSwappedAndSaidSo) {
  const std::vector<Rec> recs = {{100, 8, 4096, kQueue | kCatRead},
                                 {2100, 24, 512, kQueue | kCatWrite}};
  const ReplayTrace le = MustParseBlktrace(Blktrace(recs, false));
  const ReplayTrace be = MustParseBlktrace(Blktrace(recs, true));
  EXPECT_TRUE(be.big_endian);
  ASSERT_EQ(be.ios.size(), le.ios.size());
  for (size_t i = 0; i < le.ios.size(); ++i) {
    EXPECT_EQ(be.ios[i].due_ns, le.ios[i].due_ns);
    EXPECT_EQ(be.ios[i].offset, le.ios[i].offset);
    EXPECT_EQ(be.ios[i].length, le.ios[i].length);
    EXPECT_EQ(be.ios[i].op, le.ios[i].op);
  }
}

TEST(ReplayBlktraceTest, TruncatedAndCorruptRecordsNameTheByteOffset) {
  const std::string good = Blktrace({{100, 8, 4096, kQueue | kCatRead},
                                     {200, 16, 4096, kQueue | kCatRead, 8}});
  ReplayTrace t;
  // Cut inside the second record's payload: the record starts at byte 48.
  Status s = ParseBlktrace({{"cut.bin", good.substr(0, good.size() - 3)}}, {}, &t);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cut.bin: byte offset 48: truncated record"), std::string::npos)
      << s.message();
  // Cut inside the second record's header.
  s = ParseBlktrace({{"cut.bin", good.substr(0, 60)}}, {}, &t);
  EXPECT_NE(s.message().find("byte offset 48: truncated record: 12 bytes left"),
            std::string::npos)
      << s.message();
  // A record of the other byte order in the middle.
  const std::string mixed = Blktrace({{100, 8, 4096, kQueue | kCatRead}}) +
                            Blktrace({{200, 8, 4096, kQueue | kCatRead}}, true);
  s = ParseBlktrace({{"mixed.bin", mixed}}, {}, &t);
  EXPECT_NE(s.message().find("mixed.bin: byte offset 48: record in the other byte order"),
            std::string::npos)
      << s.message();
  // Another version.
  Rec v6{100, 8, 4096, kQueue | kCatRead};
  v6.magic = 0x65617406;
  s = ParseBlktrace({{"v6.bin", Blktrace({v6})}}, {}, &t);
  EXPECT_NE(s.message().find("v6.bin: byte offset 0: blktrace version 6"), std::string::npos)
      << s.message();
  // Garbage after a good record.
  s = ParseBlktrace({{"junk.bin", Blktrace({{100, 8, 4096, kQueue | kCatRead}}) +
                                      std::string(48, 'J')}},
                    {}, &t);
  EXPECT_NE(s.message().find("junk.bin: byte offset 48: bad blktrace magic"), std::string::npos)
      << s.message();
}

TEST(ReplayBlktraceTest, AlignRoundsLengthsUpAndOffsetsDown) {
  ReplaySettings s;
  s.align = 4096;
  const ReplayTrace t = MustParseBlktrace(Blktrace({{0, 9, 1000, kQueue | kCatRead}}), s);
  EXPECT_EQ(t.ios[0].offset, 4096u);  // 9 * 512 = 4608, aligned down
  EXPECT_EQ(t.ios[0].length, 4096u);
}

TEST(ReplayLoadTest, PerCpuFilesAreMergedByTime) {
  std::map<std::string, std::string> files = {
      {"cap/vda.blktrace.0", Blktrace({{1000, 0, 512, kQueue | kCatRead},
                                       {3000, 2, 512, kQueue | kCatRead}})},
      {"cap/vda.blktrace.1", Blktrace({{2000, 1, 512, kQueue | kCatWrite}})},
      {"cap/vda.blktrace.2", ""},  // a CPU that saw no I/O
      {"cap/vdb.blktrace.0", Blktrace({{1500, 99, 512, kQueue | kCatRead}})},
  };
  auto read = [&](const std::string& p, std::string* b) {
    auto it = files.find(p);
    if (it == files.end()) return Status::Usage("no " + p);
    *b = it->second;
    return Status::Ok();
  };
  auto list = [&](const std::string& dir, std::vector<std::string>* names) {
    EXPECT_EQ(dir, "cap/");
    for (const auto& [p, b] : files) names->push_back(p.substr(4));
    return Status::Ok();
  };
  ReplayTrace t;
  Status s = LoadReplayTrace("cap/vda.blktrace.1", {}, read, list, &t);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(t.ios.size(), 3u);
  EXPECT_EQ(t.format, "blktrace (2 per-CPU files)");
  EXPECT_EQ(t.ios[0].offset, 0u);
  EXPECT_EQ(t.ios[1].offset, 512u);
  EXPECT_EQ(t.ios[1].op, IoOp::kWrite);
  EXPECT_EQ(t.ios[2].offset, 1024u);
  EXPECT_EQ(t.ios[2].due_ns, 2000u);
}

TEST(ReplayLoadTest, TextThatIsNoTraceSaysWhatWasExpected) {
  auto read = [](const std::string&, std::string* b) {
    *b = "[job]\nrw=read\n";
    return Status::Ok();
  };
  auto list = [](const std::string&, std::vector<std::string>*) { return Status::Ok(); };
  ReplayTrace t;
  Status s = LoadReplayTrace("job.fio", {}, read, list, &t);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("job.fio: byte offset 0: line 1: not a fio iolog"),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace blkgen

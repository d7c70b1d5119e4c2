#include "devmodel/hdd.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "hdd_geometry.h"
#include "rng.h"
#include "test_util.h"

namespace devmodel {
namespace {

constexpr TimeNs kSecond = 1000000000;

HddConfig Desktop() {
  HddConfig c;  // defaults: 1 TB, 7200 rpm, 4 zones 210..120 MB/s
  c.zone_mb_s = {210, 200, 190, 180, 170, 160, 150, 140, 130, 120, 110, 100};
  return c;
}

std::unique_ptr<Device> Make(const HddConfig& c) {
  std::string error;
  auto d = NewHdd(c, &error);
  EXPECT_NE(d, nullptr) << error;
  return d;
}

Request Read(std::uint64_t offset, std::uint64_t length) {
  Request r;
  r.op = Op::kRead;
  r.offset_bytes = offset;
  r.length_bytes = length;
  return r;
}

TEST(HddGeometryTest, SeekCurveIsMonotoneAndHitsItsFigures) {
  std::string error;
  internal::HddGeometry g(Desktop(), &error);
  ASSERT_TRUE(g.ok()) << error;
  EXPECT_EQ(g.SeekNs(0), 0u);
  EXPECT_EQ(g.SeekNs(1), 1000000u);
  EXPECT_NEAR(static_cast<double>(g.SeekNs(g.cylinders() - 1)), 17e6, 1e3);
  std::uint64_t prev = 0;
  for (std::uint32_t d = 1; d < g.cylinders(); d += 97) {
    EXPECT_GE(g.SeekNs(d), prev);
    prev = g.SeekNs(d);
  }
  EXPECT_NEAR(g.MeanRandomSeekNs(), 8.5e6, 1e3);
  for (std::uint32_t z = 0; z < g.zones().size(); ++z) {
    EXPECT_NEAR(g.ZoneRateBytesPerSec(z) / 1e6, Desktop().zone_mb_s[z], 0.1);
  }
}

TEST(HddTest, Qd1RandomReadsAverageSeekPlusHalfRevolutionPlusTransfer) {
  const HddConfig c = Desktop();
  auto hdd = Make(c);
  EXPECT_EQ(hdd->rotation_rate_rpm(), 7200u);
  internal::Rng rng(5);
  const std::uint64_t blocks = c.capacity_bytes / 4096;
  const auto done = testing::RunClosedLoop(
      *hdd, 1, 4000, [&](TimeNs) { return Read(rng.Below(blocks) * 4096, 4096); });
  double sum = 0;
  for (const auto& f : done) sum += static_cast<double>(f.completed_ns - f.submitted_ns);
  const double mean = sum / done.size();
  const double rev = 60e9 / c.rpm;
  const double mean_rate = (210.0 + 100.0) / 2 * 1e6;  // zones are equal in cylinders
  const double expected =
      c.average_seek_ns + rev / 2 + 4096 / mean_rate * 1e9 + c.command_overhead_ns;
  printf("[ measured ] QD1 random 4K read: %.3f ms (expected %.3f ms)\n", mean / 1e6,
         expected / 1e6);
  EXPECT_NEAR(mean, expected, 0.05 * expected);
}

double SequentialMbS(const HddConfig& c, std::uint64_t start_byte) {
  auto hdd = Make(c);
  std::uint64_t offset = start_byte;
  const std::uint64_t chunk = 1 << 20;
  const auto done = testing::RunClosedLoop(*hdd, 1, 200, [&](TimeNs) {
    const Request r = Read(offset, chunk);
    offset += chunk;
    return r;
  });
  // Rate between the first and the last completion: the steady stream.
  const double seconds = (done.back().completed_ns - done.front().completed_ns) / 1e9;
  return (done.size() - 1) * static_cast<double>(chunk) / seconds / 1e6;
}

TEST(HddTest, SequentialThroughputMatchesOuterAndInnerZone) {
  const HddConfig c = Desktop();
  std::string error;
  internal::HddGeometry g(c, &error);
  const auto& inner = g.zones().back();
  const double outer_rate = SequentialMbS(c, 0);
  const double inner_rate = SequentialMbS(c, inner.first_lba * c.logical_block_bytes);
  printf(
      "[ measured ] sequential 1 MiB reads: outer %.1f MB/s (profile %.0f), inner %.1f MB/s "
      "(profile %.0f)\n",
      outer_rate, c.zone_mb_s.front(), inner_rate, c.zone_mb_s.back());
  EXPECT_NEAR(outer_rate, c.zone_mb_s.front(), 0.02 * c.zone_mb_s.front());
  EXPECT_NEAR(inner_rate, c.zone_mb_s.back(), 0.02 * c.zone_mb_s.back());
}

double RandomReadIops(QueuePolicy policy, int depth) {
  HddConfig c = Desktop();
  c.queue_policy = policy;
  auto hdd = Make(c);
  internal::Rng rng(9);
  const std::uint64_t blocks = c.capacity_bytes / 4096;
  const auto done = testing::RunClosedLoop(
      *hdd, depth, 3000, [&](TimeNs) { return Read(rng.Below(blocks) * 4096, 4096); });
  return done.size() / (done.back().completed_ns / 1e9);
}

TEST(HddTest, SptfAtDepth32BeatsFifoOnRandomReads) {
  const double fifo = RandomReadIops(QueuePolicy::kFifo, 32);
  const double sptf = RandomReadIops(QueuePolicy::kSptf, 32);
  const double sptf1 = RandomReadIops(QueuePolicy::kSptf, 1);
  printf(
      "[ measured ] random 4K reads: FIFO QD32 %.0f IOPS, SPTF QD32 %.0f IOPS, SPTF QD1 %.0f "
      "IOPS\n",
      fifo, sptf, sptf1);
  EXPECT_GT(sptf, 1.5 * fifo);
  EXPECT_NEAR(sptf1, fifo, 0.1 * fifo);  // nothing to reorder at depth 1
}

TEST(HddTest, WriteCacheAbsorbsWritesAndFlushWaitsForDestage) {
  HddConfig c = Desktop();
  auto hdd = Make(c);
  Request w = Read(123 * 4096, 4096);
  w.op = Op::kWrite;
  const Completion wc = hdd->Submit(w, 0);
  EXPECT_LT(wc.deadline_ns, 200000u);  // overhead + interface, no mechanics
  Request f;
  f.op = Op::kFlush;
  const Completion fc = hdd->Submit(f, wc.deadline_ns);
  EXPECT_TRUE(fc.final);
  EXPECT_GT(fc.deadline_ns, 1000000u);  // waited for the media write
  const auto j = nlohmann::json::parse(hdd->CountersJson());
  EXPECT_EQ(j["destages"], 1);
  c.write_cache = false;
  auto wt = Make(c);
  EXPECT_GT(wt->Submit(w, 0).deadline_ns, 1000000u);
}

TEST(HddTest, SptfFlushCompletesAfterQueuedDestages) {
  HddConfig c = Desktop();
  c.queue_policy = QueuePolicy::kSptf;
  auto hdd = Make(c);
  internal::Rng rng(3);
  std::vector<Request> reqs;
  for (int i = 0; i < 20; ++i) {
    Request w = Read(rng.Below(1000000) * 4096, 4096);
    w.op = i == 19 ? Op::kFlush : Op::kWrite;
    if (w.op == Op::kFlush) w.length_bytes = w.offset_bytes = 0;
    reqs.push_back(w);
  }
  std::size_t next = 0;
  const auto done = testing::RunClosedLoop(*hdd, 20, 20, [&](TimeNs) { return reqs[next++]; });
  ASSERT_EQ(done.size(), 20u);
  EXPECT_EQ(done.back().request.op, Op::kFlush);
  EXPECT_GT(done.back().completed_ns, 19 * 2000000u);  // 19 random media writes
}

TEST(HddTest, RejectsImpossibleSeekFigures) {
  HddConfig c = Desktop();
  c.average_seek_ns = 16900000;  // close to full stroke: no curve fits
  std::string error;
  EXPECT_EQ(NewHdd(c, &error), nullptr);
  EXPECT_NE(error.find("hdd.average_seek_ms (16.9) must be in ["), std::string::npos) << error;
}

TEST(HddTest, SptfPollOfAnUnknownTagIsFinalAtNow) {
  // devmodel.h: "An unknown tag yields {now_ns, 1}", also while other
  // commands are queued (the poll used to answer "poll again" for any tag).
  HddConfig c = Desktop();
  c.queue_policy = QueuePolicy::kSptf;
  std::string error;
  auto hdd = NewHdd(c, &error);
  ASSERT_NE(hdd, nullptr) << error;
  Request r;
  r.op = Op::kRead;
  r.length_bytes = 4096;
  for (std::uint64_t tag = 1; tag <= 4; ++tag) {
    r.tag = tag;
    r.offset_bytes = tag * (100ull << 30);
    EXPECT_FALSE(hdd->Submit(r, 1000).final);
  }
  const Completion unknown = hdd->Poll(99, 2000);
  EXPECT_EQ(unknown.deadline_ns, 2000u);
  EXPECT_TRUE(unknown.final);
}

// A command the host took back is still served (the others' times do not
// change) but never reported: a poll of its tag is unknown, and it leaves no
// decided completion behind.
TEST(HddTest, SptfCancelledCommandIsServedAndForgotten) {
  HddConfig c = Desktop();
  c.queue_policy = QueuePolicy::kSptf;
  auto kept = Make(c), cancelled = Make(c);
  Request r = Read(0, 4096);
  for (std::uint64_t tag = 1; tag <= 4; ++tag) {
    r.tag = tag;
    r.offset_bytes = tag * (100ull << 30);
    EXPECT_FALSE(kept->Submit(r, 1000).final);
    EXPECT_FALSE(cancelled->Submit(r, 1000).final);
  }
  EXPECT_TRUE(cancelled->Cancel(2));
  EXPECT_FALSE(cancelled->Cancel(2));
  const TimeNs late = 10 * kSecond;
  for (const std::uint64_t tag : {1, 3, 4}) {
    const Completion want = kept->Poll(tag, late), got = cancelled->Poll(tag, late);
    EXPECT_TRUE(got.final);
    EXPECT_EQ(got.deadline_ns, want.deadline_ns) << "tag " << tag;
  }
  EXPECT_LT(kept->Poll(2, late).deadline_ns, late);  // served long before
  const Completion forgotten = cancelled->Poll(2, late);
  EXPECT_TRUE(forgotten.final);
  EXPECT_EQ(forgotten.deadline_ns, late);
  EXPECT_EQ(cancelled->MemoryBytes(), kept->MemoryBytes());
}

}  // namespace
}  // namespace devmodel

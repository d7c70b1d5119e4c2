#include "devmodel/cloud.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "devmodel/ssd.h"
#include "devmodel/zero.h"
#include "test_util.h"

namespace devmodel {
namespace {

constexpr TimeNs kSecond = 1000000000;

std::unique_ptr<Device> Make(const CloudConfig& c, std::uint64_t seed = 1) {
  ZeroConfig z;
  z.capacity_bytes = 100ull << 30;
  std::string error;
  auto d = NewCloudVolume(c, NewZero(z, &error), seed, &error);
  EXPECT_NE(d, nullptr) << error;
  return d;
}

CloudConfig Gp3() {
  CloudConfig c;
  c.iops_cap = 3000;
  c.throughput_mib_s = 125;
  c.latency_jitter_mean_ns = 0;
  return c;
}

CloudConfig Gp2(std::uint64_t credits) {
  CloudConfig c;
  c.iops_per_gib = 3;  // 100 GiB -> 300 IOPS baseline
  c.iops_burst = 3000;
  c.burst_credits = credits;
  c.throughput_mib_s = 128;
  c.latency_jitter_mean_ns = 0;
  return c;
}

Request Rd(std::uint64_t offset, std::uint64_t length) {
  Request r;
  r.op = Op::kRead;
  r.offset_bytes = offset;
  r.length_bytes = length;
  return r;
}

nlohmann::json Counters(const Device& d) { return nlohmann::json::parse(d.CountersJson()); }

TEST(CloudTest, SteadyIopsEqualsTheCap) {
  auto vol = Make(Gp3());
  std::uint64_t i = 0;
  const auto done = testing::RunClosedLoop(*vol, 64, 30000,
                                           [&](TimeNs) { return Rd((i++ % 1000) * 4096, 4096); });
  const double seconds = (done.back().completed_ns - done.front().completed_ns) / 1e9;
  const double iops = (done.size() - 1) / seconds;
  printf("[ measured ] gp3 QD64 4K: %.1f IOPS (cap 3000)\n", iops);
  EXPECT_NEAR(iops, 3000, 30);
}

TEST(CloudTest, BurstLastsCreditsOverBurstMinusBaseline) {
  const std::uint64_t credits = 60000;
  auto vol = Make(Gp2(credits));
  std::uint64_t i = 0;
  const auto done = testing::RunClosedLoop(*vol, 32, 90000,
                                           [&](TimeNs) { return Rd((i++ % 1000) * 4096, 4096); });
  // The burst ends at the first completion spaced like the baseline rate.
  TimeNs end = 0;
  for (std::size_t k = 1; k < done.size(); ++k) {
    if (done[k].completed_ns - done[k - 1].completed_ns > kSecond / 1000) {
      end = done[k - 1].completed_ns;
      break;
    }
  }
  const double expected = static_cast<double>(credits) / (3000 - 300);
  printf("[ measured ] gp2 burst lasted %.3f s (expected %.3f s)\n", end / 1e9, expected);
  EXPECT_NEAR(end / 1e9, expected, 0.01 * expected);
  // Then the baseline: 300 IOPS.
  const double tail = (done.back().completed_ns - end) / 1e9;
  const std::size_t after =
      done.size() -
      (std::find_if(done.begin(), done.end(), [&](const auto& f) { return f.completed_ns > end; }) -
       done.begin());
  EXPECT_NEAR(after / tail, 300, 3);
}

TEST(CloudTest, OneMebibyteCountsAsFourIos) {
  CloudConfig c = Gp3();
  c.throughput_mib_s = 100000;  // keep bandwidth out of the way
  auto vol = Make(c);
  vol->Submit(Rd(0, 1 << 20), 0);
  EXPECT_EQ(Counters(*vol)["io_units"], 4);
  vol->Submit(Rd(0, 256 << 10), kSecond);
  EXPECT_EQ(Counters(*vol)["io_units"], 5);
  // Back-to-back 1 MiB I/Os run at cap / 4.
  std::uint64_t i = 0;
  auto vol2 = Make(c);
  const auto done = testing::RunClosedLoop(*vol2, 16, 3000,
                                           [&](TimeNs) { return Rd((i++ % 64) << 20, 1 << 20); });
  const double rate =
      (done.size() - 1) / ((done.back().completed_ns - done.front().completed_ns) / 1e9);
  EXPECT_NEAR(rate, 750, 7.5);
}

TEST(CloudTest, BandwidthCapLimitsLargeIos) {
  auto vol = Make(Gp3());  // 125 MiB/s, 3000 IOPS: 256 KiB I/Os are bandwidth bound
  std::uint64_t i = 0;
  const auto done = testing::RunClosedLoop(*vol, 16, 4000,
                                           [&](TimeNs) { return Rd((i++ % 64) << 18, 256 << 10); });
  const double mib_s =
      (done.size() - 1) * 0.25 / ((done.back().completed_ns - done.front().completed_ns) / 1e9);
  EXPECT_NEAR(mib_s, 125, 1.25);
}

TEST(CloudTest, CreditsRefillAtTheBaselineRate) {
  auto vol = Make(Gp2(3000));
  std::uint64_t i = 0;
  auto done =
      testing::RunClosedLoop(*vol, 8, 3000, [&](TimeNs) { return Rd((i++ % 100) * 4096, 4096); });
  const TimeNs drained = done.back().completed_ns;
  EXPECT_LT(Counters(*vol)["credits_left"].get<double>(), 300.0);
  const double before = Counters(*vol)["credits_left"].get<double>();
  vol->Submit(Rd(0, 4096), drained + 5 * kSecond);  // idle 5 s, then one I/O
  const double after = Counters(*vol)["credits_left"].get<double>();
  printf("[ measured ] credits %.1f -> %.1f after 5 s idle (+1 I/O); baseline 300/s\n", before,
         after);
  EXPECT_NEAR(after - before, 5 * 300 - 1, 15);
}

TEST(CloudTest, NetworkJitterIsSeededAndAboveTheFloor) {
  CloudConfig c = Gp3();
  c.latency_jitter_mean_ns = 200000;
  auto a = Make(c, 77), b = Make(c, 77), other = Make(c, 78);
  bool differs = false;
  for (int k = 0; k < 100; ++k) {
    const TimeNs now = k * kSecond / 100;
    const TimeNs da = a->Submit(Rd(0, 4096), now).deadline_ns;
    EXPECT_EQ(da, b->Submit(Rd(0, 4096), now).deadline_ns);
    differs |= da != other->Submit(Rd(0, 4096), now).deadline_ns;
    EXPECT_GE(da, now + c.latency_floor_ns);
  }
  EXPECT_TRUE(differs);
}

// An SSD whose reads wait for its host link in ready order returns poll
// times; the volume passes them on and adds the network leg to the SSD's
// final deadline.
// A small SSD, whose reads' deadlines are never final at submission.
SsdConfig SmallSsd() {
  SsdConfig s;
  s.channels = 2;
  s.dies_per_channel = 1;
  s.blocks_per_plane = 64;
  s.pages_per_block = 64;
  return s;
}

TEST(CloudTest, PollsABackingWhoseDeadlinesAreNotFinal) {
  CloudConfig c = Gp3();
  c.latency_floor_ns = 500000;
  const SsdConfig s = SmallSsd();
  std::string error;
  auto ssd = NewSsd(s, 1, &error);
  ASSERT_NE(ssd, nullptr) << error;
  ASSERT_FALSE(ssd->deadlines_final());
  auto alone = NewSsd(s, 1, &error);
  auto vol = NewCloudVolume(c, std::move(ssd), 1, &error);
  ASSERT_NE(vol, nullptr) << error;
  EXPECT_FALSE(vol->deadlines_final());
  Request w;
  w.op = Op::kWrite;
  w.length_bytes = 4096;
  w.tag = 1;
  vol->Submit(w, 0);
  alone->Submit(w, 0);
  Request r = w;
  r.op = Op::kRead;
  r.tag = 2;
  const TimeNs want = testing::RunToFinal(*alone, {{r, kSecond}})[0];
  EXPECT_EQ(testing::RunToFinal(*vol, {{r, kSecond}})[0], want + c.latency_floor_ns);
}

TEST(CloudTest, CancelForgetsTheTagHereAndInTheBacking) {
  std::string error;
  auto vol = NewCloudVolume(Gp3(), NewSsd(SmallSsd(), 1, &error), 1, &error);
  ASSERT_NE(vol, nullptr) << error;
  Request r = Rd(0, 4096);
  r.tag = 5;
  ASSERT_FALSE(vol->Submit(r, kSecond).final);
  EXPECT_TRUE(vol->Cancel(5));
  EXPECT_FALSE(vol->Cancel(5));
  const Completion c = vol->Poll(5, 2 * kSecond);  // unknown now
  EXPECT_TRUE(c.final);
  EXPECT_EQ(c.deadline_ns, 2 * kSecond);
}

TEST(CloudTest, RefusesNoBacking) {
  std::string error;
  EXPECT_EQ(NewCloudVolume(Gp3(), nullptr, 1, &error), nullptr);
  EXPECT_NE(error.find("backing"), std::string::npos);
}

TEST(CloudTest, WeeksIdleRefillTheBucketWithoutOverflow) {
  // 16000 IOPS baseline x 1e15 ns idle overflowed int64 nano-credits (UB).
  CloudConfig c = Gp2(5400000);
  c.iops_per_gib = 10000;
  c.iops_baseline_max = 16000;
  c.iops_burst = 20000;
  auto cloud = Make(c);
  Request r;
  r.op = Op::kRead;
  r.length_bytes = 4096;
  TimeNs now = 0;
  for (int i = 0; i < 1000; ++i) now = cloud->Submit(r, now).deadline_ns;
  now += 1000000000000000ull;  // 11.6 days idle
  const Completion done = cloud->Submit(r, now);
  EXPECT_GE(done.deadline_ns, now);
  EXPECT_LT(done.deadline_ns, now + kSecond);
  const auto counters = nlohmann::json::parse(cloud->CountersJson());
  EXPECT_NEAR(counters["credits_left"].get<double>(), 5400000.0 - 1, 1.0);
}

TEST(CloudTest, RejectsInconsistentConfigs) {
  ZeroConfig z;
  std::string error;
  CloudConfig c = Gp2(5400000);
  c.iops_baseline_min = 20000;
  c.iops_baseline_max = 100;
  EXPECT_EQ(NewCloudVolume(c, NewZero(z, &error), 1, &error), nullptr);
  EXPECT_EQ(error, "cloud.iops_baseline_min (20000) must be <= cloud.iops_baseline_max (100)");
  c = Gp2(2000000000);
  EXPECT_EQ(NewCloudVolume(c, NewZero(z, &error), 1, &error), nullptr);
  EXPECT_EQ(error, "cloud.burst_credits must be in [0, 1000000000]");
}

}  // namespace
}  // namespace devmodel

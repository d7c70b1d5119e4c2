// The SSD's SLC write cache (SsdConfig::slc_*): writes at the SLC program
// time while the cache has room, at the TLC time beyond it, the dynamic part
// shrinking as the drive fills, and folding into TLC when idle (which frees
// the cache and delays reads that meet it). Every expected time is derived
// from the configuration.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "devmodel/profile.h"
#include "devmodel/ssd.h"
#include "ssd_model.h"
#include "ssd_test_util.h"

namespace devmodel {
namespace {

using internal::SsdModel;
using testing::Counters;
using testing::MakeSsd;
using testing::Rq;
using testing::SmallSsdConfig;

constexpr TimeNs kSecond = 1000000000;
constexpr std::uint64_t kUnitBytes = 2 * 16384;  // one program unit: planes x page

// One die on one channel, so program units follow each other on one timeline;
// write-through, so a write completes when its program does.
SsdConfig OneDieSlcConfig() {
  SsdConfig c;
  c.channels = 1;
  c.dies_per_channel = 1;
  c.planes_per_die = 2;
  c.blocks_per_plane = 64;
  c.pages_per_block = 64;
  c.page_bytes = 16384;
  c.page_read_ns = 50000;
  c.page_program_ns = 500000;
  c.channel_mb_s = 800;
  c.host_link_mb_s = 0;
  c.controller_overhead_ns = 4000;
  c.write_buffer_bytes = 0;
  c.slc_static_bytes = 8 * kUnitBytes;
  c.slc_program_ns = 150000;
  c.slc_fold_idle_ns = 1000000;
  return c;
}

TimeNs Xfer(std::uint64_t bytes, std::uint32_t mb_s) { return (bytes * 1000 + mb_s - 1) / mb_s; }

// `count` program units written at once from `first_unit` on; completions.
std::vector<TimeNs> Burst(SsdModel& ssd, std::uint64_t first_unit, int count, TimeNs now) {
  std::vector<TimeNs> done;
  for (int i = 0; i < count; ++i) {
    done.push_back(
        ssd.Submit(Rq(Op::kWrite, (first_unit + i) * kUnitBytes, kUnitBytes), now).deadline_ns);
  }
  return done;
}

TEST(SsdSlcTest, BurstWithinTheCacheRunsAtSlcRateAndBeyondItAtTlcRate) {
  const SsdConfig c = OneDieSlcConfig();
  auto ssd = MakeSsd(c);
  const std::uint64_t slc_units = c.slc_static_bytes / kUnitBytes;
  const int burst = static_cast<int>(slc_units) + 4;
  const std::vector<TimeNs> done = Burst(*ssd, 0, burst, kSecond);
  const TimeNs xfer = Xfer(kUnitBytes, c.channel_mb_s);
  // Units follow each other on the die: transfer, then program.
  TimeNs expected = kSecond + c.controller_overhead_ns;
  for (int i = 0; i < burst; ++i) {
    expected +=
        xfer + (static_cast<std::uint64_t>(i) < slc_units ? c.slc_program_ns : c.page_program_ns);
    EXPECT_EQ(done[i], expected) << "unit " << i;
  }
  printf("[ measured ] burst: %.0f MB/s in SLC, %.0f MB/s beyond it\n",
         kUnitBytes * 1e3 / (done[1] - done[0]),
         kUnitBytes * 1e3 / (done[burst - 1] - done[burst - 2]));
  const auto j = Counters(*ssd);
  EXPECT_EQ(j["slc_bytes_in_use"], c.slc_static_bytes);
  EXPECT_EQ(j["slc_bytes_written"], c.slc_static_bytes);
  EXPECT_EQ(j["slc_bypass_bytes"], (burst - slc_units) * kUnitBytes);
  EXPECT_EQ(j["slc_bytes_folded"], 0);
}

TEST(SsdSlcTest, IdleFoldingFreesTheCacheAndDelaysReadsThatMeetIt) {
  const SsdConfig c = OneDieSlcConfig();
  auto ssd = MakeSsd(c);
  const std::uint64_t slc_units = c.slc_static_bytes / kUnitBytes;
  const TimeNs last = Burst(*ssd, 0, static_cast<int>(slc_units), kSecond).back();
  const TimeNs xfer = Xfer(kUnitBytes, c.channel_mb_s);
  const TimeNs fold_step = c.page_read_ns + 2 * xfer + c.page_program_ns;
  // A read just after the idle time: the first fold step is in progress on
  // the die (no suspend), so the read senses after it.
  const TimeNs idle_from = last + c.slc_fold_idle_ns;
  const TimeNs read_done = testing::Final(*ssd, Rq(Op::kRead, 0, 4096), idle_from + 1000);
  EXPECT_EQ(read_done, idle_from + fold_step + c.page_read_ns + Xfer(4096, c.channel_mb_s));
  auto j = Counters(*ssd);
  EXPECT_EQ(j["slc_bytes_folded"], kUnitBytes);
  EXPECT_EQ(j["slc_bytes_in_use"], (slc_units - 1) * kUnitBytes);
  // Idle long enough for the other steps: the cache is empty again and the
  // next burst runs at the SLC rate.
  const TimeNs later = read_done + c.slc_fold_idle_ns + (slc_units - 1) * fold_step + 1;
  const std::vector<TimeNs> again = Burst(*ssd, slc_units, 2, later);
  j = Counters(*ssd);
  EXPECT_EQ(j["slc_bytes_folded"], c.slc_static_bytes);
  EXPECT_EQ(again[0], later + c.controller_overhead_ns + xfer + c.slc_program_ns);
  EXPECT_EQ(again[1] - again[0], xfer + c.slc_program_ns);
  EXPECT_EQ(j["slc_bytes_in_use"], 2 * kUnitBytes);
}

TEST(SsdSlcTest, DynamicPartShrinksAsTheDriveFills) {
  SsdConfig c = OneDieSlcConfig();
  c.slc_static_bytes = 2 * kUnitBytes;
  c.slc_dynamic_max_bytes = 1ull << 40;  // bound by free space only
  c.slc_dynamic_free_ratio = 3;
  {
    auto fresh = MakeSsd(c);
    EXPECT_EQ(Counters(*fresh)["slc_capacity_bytes"],
              c.slc_static_bytes + fresh->capacity_bytes() / c.slc_dynamic_free_ratio);
  }
  c.precondition = Precondition::kFull;
  auto ssd = MakeSsd(c);
  EXPECT_EQ(Counters(*ssd)["slc_capacity_bytes"], c.slc_static_bytes);  // no free space
  const std::uint64_t half = ssd->capacity_bytes() / 2 / 4096 * 4096;
  ssd->Submit(Rq(Op::kTrim, half, ssd->capacity_bytes() - half), kSecond);
  const std::uint64_t free_bytes = ssd->capacity_bytes() - half;
  EXPECT_EQ(Counters(*ssd)["slc_capacity_bytes"],
            c.slc_static_bytes + free_bytes / c.slc_dynamic_free_ratio);
  // The dynamic part is capped by slc_dynamic_max_bytes.
  c.slc_dynamic_max_bytes = 3 * kUnitBytes;
  c.precondition = Precondition::kNone;
  auto capped = MakeSsd(c);
  EXPECT_EQ(Counters(*capped)["slc_capacity_bytes"], 5 * kUnitBytes);
}

TEST(SsdSlcTest, FullDriveWithoutStaticCacheWritesStraightToTlc) {
  SsdConfig c = OneDieSlcConfig();
  c.slc_static_bytes = 0;
  c.slc_dynamic_max_bytes = 1ull << 30;
  c.precondition = Precondition::kFull;
  auto ssd = MakeSsd(c);
  const TimeNs done = ssd->Submit(Rq(Op::kWrite, 0, kUnitBytes), kSecond).deadline_ns;
  EXPECT_EQ(done, kSecond + c.controller_overhead_ns + Xfer(kUnitBytes, c.channel_mb_s) +
                      c.page_program_ns);
  EXPECT_EQ(Counters(*ssd)["slc_bypass_bytes"], kUnitBytes);
}

TEST(SsdSlcTest, RejectsCacheWithoutProgramTimeOrLargerThanTheDrive) {
  std::string error;
  SsdConfig c = OneDieSlcConfig();
  c.slc_program_ns = 0;
  EXPECT_FALSE(CheckSsdConfig(c, nullptr, &error));
  EXPECT_EQ(error,
            "ssd.slc_program_us must be in (0, 100000] with an SLC cache "
            "(ssd.slc_static_bytes or ssd.slc_dynamic_max_bytes > 0)");
  c = OneDieSlcConfig();
  c.slc_static_bytes = 1ull << 40;
  EXPECT_FALSE(CheckSsdConfig(c, nullptr, &error));
  EXPECT_EQ(error.rfind("ssd.slc_static_bytes (1099511627776) must be <= the exported capacity", 0),
            0u)
      << error;
  c = OneDieSlcConfig();
  c.slc_dynamic_free_ratio = 0;
  EXPECT_FALSE(CheckSsdConfig(c, nullptr, &error));
  EXPECT_EQ(error, "ssd.slc_dynamic_free_ratio must be in [1, 64]");
}

TEST(SsdSlcTest, ProfileKeysReachTheModel) {
  const std::string head =
      "[device]\nmodel = \"ssd\"\n[ssd]\nchannels = 1\ndies_per_channel = 1\n"
      "blocks_per_plane = 64\npages_per_block = 64\nwrite_buffer_bytes = 0\n"
      "host_link_mb_s = 0\nslc_static_bytes = 65536\nslc_dynamic_max_bytes = 0\n"
      "slc_dynamic_free_ratio = 3\nslc_fold_idle_ms = 2\n";
  std::string error;
  auto ssd = LoadProfileFromString(head + "slc_program_us = 120\n", "slc.toml", 1, &error);
  ASSERT_NE(ssd, nullptr) << error;
  ssd->Submit(Rq(Op::kWrite, 0, kUnitBytes), 0);
  const auto j = Counters(*ssd);
  EXPECT_EQ(j["slc_bytes_in_use"], kUnitBytes);
  EXPECT_EQ(j["slc_capacity_bytes"], 65536);
  // No SLC program time: the message points at the cache's size (line 10).
  EXPECT_EQ(LoadProfileFromString(head, "bad.toml", 1, &error), nullptr);
  EXPECT_EQ(
      error.rfind("bad.toml:10: ssd.slc_program_us must be in (0, 100000] with an SLC cache", 0),
      0u)
      << error;
}

}  // namespace
}  // namespace devmodel

#include "devmodel/ssd.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "rng.h"
#include "ssd_model.h"
#include "ssd_test_util.h"
#include "test_util.h"

namespace devmodel {
namespace {

using internal::SsdModel;
using testing::Counters;
using testing::MakeSsd;
using testing::Rq;
using testing::SmallSsdConfig;

constexpr TimeNs kSecond = 1000000000;

TEST(SsdTest, Qd1ReadIsReadTimePlusTransfersPlusOverhead) {
  const SsdConfig c = SmallSsdConfig();
  auto ssd = MakeSsd(c);
  ssd->Submit(Rq(Op::kWrite, 0, 4096), 0);
  ssd->Submit(Rq(Op::kFlush, 0, 0), 10);
  const TimeNs now = kSecond;  // long after the program finished
  const TimeNs channel = (4096 * 1000 + 799) / 800;  // 5120 ns
  const TimeNs link = (4096 * 1000 + 3199) / 3200;   // 1280 ns
  // Each stage is decided when the data reaches it: sensed, then in the
  // controller, then through the link.
  const Completion sensed = ssd->Submit(Rq(Op::kRead, 0, 4096, 0), now);
  EXPECT_FALSE(sensed.final);
  EXPECT_EQ(sensed.deadline_ns - now, c.controller_overhead_ns + c.page_read_ns);
  const Completion in = ssd->Poll(0, sensed.deadline_ns);
  EXPECT_FALSE(in.final);
  EXPECT_EQ(in.deadline_ns - now, c.controller_overhead_ns + c.page_read_ns + channel);
  const Completion done = ssd->Poll(0, in.deadline_ns);
  EXPECT_TRUE(done.final);
  EXPECT_EQ(done.deadline_ns - now, c.controller_overhead_ns + c.page_read_ns + channel + link);
  EXPECT_EQ(Counters(*ssd)["nand_pages_read"], 1);
}

// Writes one program unit per die so that consecutive 32 KiB regions sit on
// consecutive dies (the write frontier stripes program units over dies).
void FillOneUnitPerDie(SsdModel& ssd, int dies) {
  const std::uint64_t unit = 2 * 16384;  // planes x page
  for (int d = 0; d < dies; ++d) ssd.Submit(Rq(Op::kWrite, d * unit, unit), d);
  ssd.Submit(Rq(Op::kFlush, 0, 0), 100);
}

// The host link carries read data in the order it is ready, not the order
// the reads were submitted: a read whose data is ready while an earlier
// read still senses does not wait for the earlier read's transfer.
TEST(SsdTest, HostLinkServesReadsInTheOrderTheirDataIsReady) {
  const SsdConfig c = SmallSsdConfig();
  auto ssd = MakeSsd(c);
  const int dies = static_cast<int>(ssd->die_count());
  FillOneUnitPerDie(*ssd, dies);
  const std::uint64_t unit = 2 * 16384;
  // Two units of one die, and a die on another channel.
  const std::uint32_t die_a = ssd->DieOfOffset(0);
  std::uint64_t other = 0;
  for (int d = 1; d < dies && other == 0; ++d) {
    const std::uint32_t die = ssd->DieOfOffset(d * unit);
    if (die % c.channels != die_a % c.channels) other = d * unit;
  }
  ASSERT_NE(other, 0u);
  const TimeNs channel = (4096 * 1000 + 799) / 800;  // 5120 ns
  const TimeNs link = (4096 * 1000 + 3199) / 3200;   // 1280 ns
  const TimeNs now = kSecond;
  // a1 and a2 on one die (a2 senses after a1), then b, submitted 2 us later
  // on the other die: b's data is ready between a1's and a2's.
  const auto done = testing::RunToFinal(*ssd, {{Rq(Op::kRead, 0, 4096), now},
                                               {Rq(Op::kRead, 4096, 4096), now},
                                               {Rq(Op::kRead, other, 4096), now + 2000}});
  const TimeNs a1_ready = now + c.controller_overhead_ns + c.page_read_ns + channel;
  EXPECT_EQ(done[0], a1_ready + link);
  EXPECT_EQ(done[1], a1_ready + c.page_read_ns + channel + link);
  // b alone: 2 us after a1's data, so a1's transfer (1.28 us) is over.
  EXPECT_EQ(done[2], a1_ready + 2000 + link);
}

// A channel moves pages in the order they are sensed: a read submitted after
// a read queued behind another on its die, but sensed earlier on another die
// of the same channel, does not wait for the queued read's transfer.
TEST(SsdTest, ChannelMovesPagesInTheOrderTheyAreSensed) {
  SsdConfig c = SmallSsdConfig();
  c.host_link_mb_s = 0;  // the channel alone
  auto ssd = MakeSsd(c);
  const int dies = static_cast<int>(ssd->die_count());
  FillOneUnitPerDie(*ssd, dies);
  const std::uint64_t unit = 2 * 16384;
  const std::uint32_t die_a = ssd->DieOfOffset(0);
  std::uint64_t other = 0;  // a unit on another die of die_a's channel
  for (int d = 1; d < dies && other == 0; ++d) {
    const std::uint32_t die = ssd->DieOfOffset(d * unit);
    if (die != die_a && die % c.channels == die_a % c.channels) other = d * unit;
  }
  ASSERT_NE(other, 0u);
  const TimeNs channel = (4096 * 1000 + 799) / 800;  // 5120 ns
  const TimeNs now = kSecond;
  // a1 then a2 on die_a (a2 senses once a1's page has moved out), then b on
  // the other die: b is sensed with a1, long before a2.
  const auto done = testing::RunToFinal(*ssd, {{Rq(Op::kRead, 0, 4096), now},
                                               {Rq(Op::kRead, 4096, 4096), now},
                                               {Rq(Op::kRead, other, 4096), now}});
  const TimeNs sensed = now + c.controller_overhead_ns + c.page_read_ns;
  EXPECT_EQ(done[0], sensed + channel);
  EXPECT_EQ(done[2], sensed + 2 * channel);  // after a1 only (same sensing time, submitted later)
  EXPECT_EQ(done[1], sensed + channel + c.page_read_ns + channel);
}

// `count` random 4 KiB blocks written at time 0 to both `a` and `b`, and
// their reads from 1 s on, one every `spacing_ns` (seeded).
std::vector<testing::Timed> WrittenThenRead(Device& a, Device& b, int count,
                                            TimeNs spacing_ns, std::uint64_t seed) {
  std::vector<testing::Timed> reads;
  internal::Rng rng(seed);
  for (int i = 0; i < count; ++i) {
    const std::uint64_t offset = rng.Below(64 << 20) / 4096 * 4096;
    a.Submit(Rq(Op::kWrite, offset, 4096), 0);
    b.Submit(Rq(Op::kWrite, offset, 4096), 0);
    reads.push_back({Rq(Op::kRead, offset, 4096), kSecond + i * spacing_ns});
  }
  return reads;
}

// A read's final deadline depends on the requests, not on when it is
// polled: polling every read late gives the deadlines polling on time does.
TEST(SsdTest, HostLinkDeadlinesDoNotDependOnPollTimes) {
  const SsdConfig c = SmallSsdConfig();
  auto on_time = MakeSsd(c), late = MakeSsd(c);
  std::vector<testing::Timed> reads = WrittenThenRead(*on_time, *late, 64, 3000, 7);
  const std::vector<TimeNs> want = testing::RunToFinal(*on_time, reads);
  std::vector<Completion> first;
  for (std::size_t i = 0; i < reads.size(); ++i) {
    reads[i].request.tag = i + 1;
    first.push_back(late->Submit(reads[i].request, reads[i].at));
  }
  for (std::size_t i = reads.size(); i-- > 0;) {  // latest submitted first, all late
    const Completion c = first[i].final ? first[i] : late->Poll(i + 1, 2 * kSecond);
    EXPECT_TRUE(c.final);
    EXPECT_EQ(c.deadline_ns, want[i]) << "read " << i;
  }
}

// A read the host took back still moves its pages (the others' deadlines
// do not change) but its tag is forgotten at once.
TEST(SsdTest, CancelledReadKeepsItsTransfersAndForgetsItsTag) {
  const SsdConfig c = SmallSsdConfig();
  auto kept = MakeSsd(c), cancelled = MakeSsd(c);
  std::vector<testing::Timed> reads = WrittenThenRead(*kept, *cancelled, 32, 1000, 11);
  const std::vector<TimeNs> want = testing::RunToFinal(*kept, reads);
  const std::size_t gone = 5;
  for (std::size_t i = 0; i < reads.size(); ++i) {
    reads[i].request.tag = i + 1;
    EXPECT_FALSE(cancelled->Submit(reads[i].request, reads[i].at).final);
  }
  const TimeNs late = 2 * kSecond;
  EXPECT_TRUE(cancelled->Cancel(gone + 1));
  EXPECT_FALSE(cancelled->Cancel(gone + 1));
  for (std::size_t i = 0; i < reads.size(); ++i) {
    const Completion got = cancelled->Poll(i + 1, late);
    EXPECT_TRUE(got.final);
    EXPECT_EQ(got.deadline_ns, i == gone ? late : want[i]) << "read " << i;
  }
}

TEST(SsdTest, ReadsOnDistinctDiesRunInParallelAndOnOneDieSerialize) {
  SsdConfig c = SmallSsdConfig();
  c.host_link_mb_s = 0;  // isolate the NAND side
  auto ssd = MakeSsd(c);
  const int dies = static_cast<int>(ssd->die_count());
  FillOneUnitPerDie(*ssd, dies);
  const std::uint64_t unit = 2 * 16384;
  std::vector<std::uint32_t> seen;
  for (int d = 0; d < dies; ++d) seen.push_back(ssd->DieOfOffset(d * unit));
  std::sort(seen.begin(), seen.end());
  ASSERT_EQ(std::unique(seen.begin(), seen.end()) - seen.begin(), dies) << "striping";

  const TimeNs now = kSecond;
  const TimeNs single = c.controller_overhead_ns + c.page_read_ns + (4096 * 1000 + 799) / 800;
  std::vector<testing::Timed> spread;
  for (int d = 0; d < dies; ++d) spread.push_back({Rq(Op::kRead, d * unit, 4096), now});
  const auto spread_done = testing::RunToFinal(*ssd, spread);
  const TimeNs latest = *std::max_element(spread_done.begin(), spread_done.end());
  // Parallel: only the channel transfer is shared by the dies of a channel.
  const TimeNs channel_share = (c.dies_per_channel - 1) * ((4096 * 1000 + 799) / 800);
  EXPECT_LE(latest - now, single + channel_share);

  // The same die (8 units of one program unit, separate commands): serialized.
  const TimeNs now2 = 2 * kSecond;
  std::vector<testing::Timed> one_die;
  for (int i = 0; i < dies; ++i) one_die.push_back({Rq(Op::kRead, i * 4096, 4096), now2});
  const auto one_die_done = testing::RunToFinal(*ssd, one_die);
  const TimeNs last = *std::max_element(one_die_done.begin(), one_die_done.end());
  EXPECT_GE(last - now2, dies * c.page_read_ns);
  printf("[ measured ] %d dies in parallel: %.1f us; %d reads on one die: %.1f us\n", dies,
         (latest - now) / 1e3, dies, (last - now2) / 1e3);
}

TEST(SsdTest, WriteBufferHitIsCheaperThanAProgram) {
  const SsdConfig c = SmallSsdConfig();
  auto ssd = MakeSsd(c);
  const Completion w = ssd->Submit(Rq(Op::kWrite, 8192, 4096), 1000);
  EXPECT_LT(w.deadline_ns - 1000, c.page_program_ns / 10);  // buffered, not programmed
  const TimeNs r = testing::Final(*ssd, Rq(Op::kRead, 8192, 4096), w.deadline_ns);
  EXPECT_LT(r - w.deadline_ns, c.page_read_ns);  // served from DRAM
  EXPECT_EQ(Counters(*ssd)["write_buffer_hits"], 1);
  EXPECT_EQ(Counters(*ssd)["nand_pages_read"], 0);
}

TEST(SsdTest, WriteThroughWaitsForTheProgram) {
  SsdConfig c = SmallSsdConfig();
  c.write_buffer_bytes = 0;
  auto ssd = MakeSsd(c);
  const Completion w = ssd->Submit(Rq(Op::kWrite, 0, 4096), 0);
  EXPECT_GE(w.deadline_ns, c.page_program_ns);
}

TEST(SsdTest, FlushWaitsForBufferWithoutPlpOnly) {
  SsdConfig c = SmallSsdConfig();
  auto ssd = MakeSsd(c);
  ssd->Submit(Rq(Op::kWrite, 0, 4096), 0);
  const Completion f = ssd->Submit(Rq(Op::kFlush, 0, 0), 20000);
  EXPECT_GE(f.deadline_ns, c.page_program_ns);
  c.power_loss_protection = true;
  auto plp = MakeSsd(c);
  plp->Submit(Rq(Op::kWrite, 0, 4096), 0);
  const Completion g = plp->Submit(Rq(Op::kFlush, 0, 0), 20000);
  EXPECT_EQ(g.deadline_ns, 20000 + c.controller_overhead_ns);
}

TEST(SsdTest, TrimUnmapsAndReadsOfTrimmedDataSkipNand) {
  auto ssd = MakeSsd(SmallSsdConfig());
  ssd->Submit(Rq(Op::kWrite, 0, 65536), 0);
  ssd->Submit(Rq(Op::kFlush, 0, 0), 1);
  ssd->Submit(Rq(Op::kTrim, 0, 65536), kSecond);
  ssd->Submit(Rq(Op::kRead, 0, 65536), 2 * kSecond);
  const auto j = Counters(*ssd);
  EXPECT_EQ(j["trimmed_units"], 16);
  EXPECT_EQ(j["unmapped_reads"], 16);
  EXPECT_EQ(j["nand_pages_read"], 0);
}

TEST(SsdTest, ConcurrencyLimitDelaysTheCommandBeyondIt) {
  SsdConfig c = SmallSsdConfig();
  c.max_inflight_commands = 2;
  c.host_link_mb_s = 0;
  auto ssd = MakeSsd(c);
  FillOneUnitPerDie(*ssd, static_cast<int>(ssd->die_count()));
  const std::uint64_t unit = 2 * 16384;
  const TimeNs now = kSecond;
  const auto done = testing::RunToFinal(*ssd, {{Rq(Op::kRead, 0 * unit, 4096), now},
                                               {Rq(Op::kRead, 1 * unit, 4096), now},
                                               {Rq(Op::kRead, 2 * unit, 4096), now}});
  const TimeNs a = done[0], b = done[1], third = done[2];
  EXPECT_EQ(third - std::min(a, b), a - now);  // starts when the first one frees a slot
  EXPECT_GT(Counters(*ssd)["admission_wait_ns"], 0);
}

TEST(SsdTest, FullDriveStallsButNeverDropsWrites) {
  SsdConfig c = SmallSsdConfig();
  c.precondition = Precondition::kFull;
  auto ssd = MakeSsd(c);
  internal::Rng rng(7);
  const std::uint64_t units = ssd->capacity_bytes() / 4096;
  TimeNs now = 0, latest = 0;
  for (int i = 0; i < 100000; ++i) {
    latest = std::max(latest,
                      ssd->Submit(Rq(Op::kWrite, rng.Below(units) * 4096, 4096), now).deadline_ns);
    now += 2000;  // 500K IOPS offered: far beyond what the drive sustains
  }
  const auto j = Counters(*ssd);
  EXPECT_EQ(j["dropped_writes"], 0);
  EXPECT_GT(j["gc_runs"], 0);
  EXPECT_GT(j["write_buffer_stall_ns"], 0);
  EXPECT_GT(j["waf"].get<double>(), 1.0);
  printf("[ measured ] full drive, random 4K writes: WAF %.2f, last completion %.3f s\n",
         j["waf"].get<double>(), latest / 1e9);
}

// 4 KiB random writes, 64 in flight, on SmallSsdConfig with `channels` x
// `dies_per_channel` (8 dies either way) in steady state (25% spare): the
// write rate over the second half of 40,000 writes, in writes per second.
double SteadyWriteRate(std::uint32_t channels, std::uint32_t dies_per_channel) {
  SsdConfig c = SmallSsdConfig();
  c.channels = channels;
  c.dies_per_channel = dies_per_channel;
  c.precondition = Precondition::kSteady;
  c.capacity_bytes = SsdRawBytes(c) / 5 * 4 / 4096 * 4096;
  auto ssd = MakeSsd(c, 5);
  internal::Rng rng(13);
  const std::uint64_t units = ssd->capacity_bytes() / 4096;
  const auto done = testing::RunClosedLoop(*ssd, 64, 40000, [&](TimeNs) {
    return Rq(Op::kWrite, rng.Below(units) * 4096, 4096);
  });
  EXPECT_GT(Counters(*ssd)["gc_runs"].get<std::uint64_t>(), 0u);
  const TimeNs from = done[done.size() / 2].completed_ns, to = done.back().completed_ns;
  return static_cast<double>(done.size() - done.size() / 2 - 1) * 1e9 /
         static_cast<double>(to - from);
}

// Two dies on a channel: each die's write-side transfers (32 KiB program
// units, 41 us at 800 MB/s; GC page reads out, 20.5 us a page) take at most
// 41 / (41 + 500) of its program time and 20.5 / (20.5 + 50) of its GC
// reads, so its neighbour waits for the channel for at most that share,
// about 15%, and the dies write at least 0.85 of the rate they have with a
// channel each. A channel that is one busy-until timeline fails this: a GC
// move booked for when one die's queued work ends held the other die's
// program until then, leaving it idle.
TEST(SsdTest, DiesSharingAChannelWriteNearlyAsFastAsDiesWithOneEach) {
  const double shared = SteadyWriteRate(4, 2), own = SteadyWriteRate(8, 1);
  printf("[ measured ] steady 4K random writes: %.0f/s with 2 dies per channel, %.0f/s with 1\n",
         shared, own);
  EXPECT_GE(shared, 0.85 * own);
}

// Random writes keep GC busy on a steady-state drive; every millisecond a
// read goes to a die whose timeline is booked for more than 1 ms ahead (GC
// moves, erases, programs). Without suspend it waits for them.
double MeanReadLatencyUnderGc(bool suspend, nlohmann::json* counters, double* worst) {
  SsdConfig c = SmallSsdConfig();
  c.precondition = Precondition::kSteady;
  c.capacity_bytes = SsdRawBytes(c) / 4 * 3;  // 33% over-provisioning
  c.suspend_enabled = suspend;
  c.suspend_latency_ns = 20000;
  auto ssd = MakeSsd(c, 3);
  internal::Rng rng(11);
  const std::uint64_t units = ssd->capacity_bytes() / 4096;
  TimeNs now = kSecond;
  double sum = 0;
  int reads = 0;
  for (int i = 1; i <= 40000; ++i) {
    now += 100000;  // 10K writes/s
    ssd->Submit(Rq(Op::kWrite, rng.Below(units) * 4096, 4096), now);
    if (i % 20 != 0) continue;
    for (int tries = 0; tries < 64; ++tries) {
      const std::uint64_t offset = rng.Below(units) * 4096;
      const std::uint32_t die = ssd->DieOfOffset(offset);
      if (die == 0xFFFFFFFFu || ssd->die_busy_until(die) < now + 1000000) continue;
      // Until its page is sensed (Submit's poll time): a wait for GC all
      // comes before that, and the writes' clock must not run ahead.
      const Completion r = ssd->Submit(Rq(Op::kRead, offset, 4096), now);
      sum += static_cast<double>(r.deadline_ns - now);
      *worst = std::max(*worst, static_cast<double>(r.deadline_ns - now));
      ++reads;
      break;
    }
  }
  *counters = Counters(*ssd);
  EXPECT_GT(reads, 100);
  return sum / reads;
}

TEST(SsdTest, ReadsWaitForGcAndMuchLessWithSuspend) {
  nlohmann::json off_counters, on_counters;
  double off_worst = 0, on_worst = 0;
  const double off = MeanReadLatencyUnderGc(false, &off_counters, &off_worst);
  const double on = MeanReadLatencyUnderGc(true, &on_counters, &on_worst);
  printf(
      "[ measured ] 4K reads on a die busy with GC/programs: mean %.1f us, max %.1f us without "
      "suspend; mean %.1f us, max %.1f us with (GC runs %d, WAF %.2f, suspends %d)\n",
      off / 1e3, off_worst / 1e3, on / 1e3, on_worst / 1e3, off_counters["gc_runs"].get<int>(),
      off_counters["waf"].get<double>(), on_counters["suspends"].get<int>());
  EXPECT_GT(off_counters["gc_runs"].get<int>(), 100);
  EXPECT_GT(off, 200000.0);         // waits for the program/erase in progress
  EXPECT_GT(off_worst, 2000000.0);  // an erase or a GC step: milliseconds
  EXPECT_LT(on * 3, off);
  EXPECT_LT(on_worst * 10, off_worst);  // the tail shrinks by an order of magnitude
}

TEST(SsdTest, SparseStateFourTebibytesWithEightGibibytesWritten) {
  SsdConfig c;
  c.channels = 8;
  c.dies_per_channel = 8;
  c.planes_per_die = 4;
  c.blocks_per_plane = 1400;
  c.pages_per_block = 768;
  c.page_bytes = 16384;
  c.capacity_bytes = 4ull << 40;
  auto ssd = MakeSsd(c);
  const std::uint64_t before = ssd->MemoryBytes();
  TimeNs now = 0;
  for (std::uint64_t off = 0; off < (8ull << 30); off += 1 << 20) {
    now = ssd->Submit(Rq(Op::kWrite, off, 1 << 20), now).deadline_ns;
  }
  const std::uint64_t after = ssd->MemoryBytes();
  printf("[ measured ] 4 TiB SSD: %.1f MiB empty, %.1f MiB after 8 GiB written\n",
         before / 1048576.0, after / 1048576.0);
  EXPECT_LT(after, 128ull << 20);
}

// The worst case for the mapping: 8 GiB of 4 KiB writes scattered uniformly
// over 4 TiB (about two per 16 MiB region). The model's own count, the malloc
// heap and the resident memory all grow by less than 128 MiB, and resident
// growth (huge-page pools are mapped fresh) does not exceed the model's count.
TEST(SsdTest, SparseStateHoldsForScatteredWrites) {
  SsdConfig c;
  c.channels = 8;
  c.dies_per_channel = 8;
  c.planes_per_die = 4;
  c.blocks_per_plane = 1400;
  c.pages_per_block = 768;
  c.page_bytes = 16384;
  c.capacity_bytes = 4ull << 40;
  const struct mallinfo2 heap_before = mallinfo2();
  const std::uint64_t rss_before = testing::ResidentBytes();
  auto ssd = MakeSsd(c);
  internal::Rng rng(21);
  const std::uint64_t units = c.capacity_bytes / 4096;
  TimeNs now = 0;
  for (std::uint64_t written = 0; written < (8ull << 30); written += 4096) {
    now += 2000;
    ssd->Submit(Rq(Op::kWrite, rng.Below(units) * 4096, 4096), now);
  }
  const struct mallinfo2 heap_after = mallinfo2();
  const double heap = static_cast<double>(heap_after.uordblks + heap_after.hblkhd) -
                      static_cast<double>(heap_before.uordblks + heap_before.hblkhd);
  const double rss =
      static_cast<double>(testing::ResidentBytes()) - static_cast<double>(rss_before);
  const double model = static_cast<double>(ssd->MemoryBytes());
  printf(
      "[ measured ] 4 TiB SSD, 8 GiB of scattered 4K writes: model %.1f MiB, malloc heap "
      "+%.1f MiB, resident +%.1f MiB\n",
      model / 1048576.0, heap / 1048576.0, rss / 1048576.0);
  EXPECT_LT(model, 128.0 * (1 << 20));
  EXPECT_LT(heap, 128.0 * (1 << 20));
  if (!testing::kUnderAddressSanitizer) {  // its shadow and quarantine count as resident
    EXPECT_LT(rss, 128.0 * (1 << 20));
    EXPECT_LT(rss, 1.1 * model + 4.0 * (1 << 20));
  }
  EXPECT_EQ(Counters(*ssd)["dropped_writes"], 0);
}

TEST(SsdTest, RejectsInconsistentGeometry) {
  SsdConfig c = SmallSsdConfig();
  c.capacity_bytes = SsdRawBytes(c);  // no over-provisioning
  std::string error;
  EXPECT_EQ(NewSsd(c, 1, &error), nullptr);
  EXPECT_NE(error.find("ssd.capacity_bytes must be in ["), std::string::npos) << error;
  c = SmallSsdConfig();
  c.page_bytes = 6000;
  EXPECT_EQ(NewSsd(c, 1, &error), nullptr);
  EXPECT_NE(error.find("ssd.page_bytes (6000) must be a multiple of ssd.mapping_unit_bytes"),
            std::string::npos)
      << error;
  c = SmallSsdConfig();
  c.channels = 64;
  c.dies_per_channel = 64;
  c.blocks_per_plane = 1 << 20;  // 2^32 blocks: 64 GiB of block metadata
  c.pages_per_block = 1;
  c.planes_per_die = 1;
  c.page_bytes = c.mapping_unit_bytes;
  EXPECT_EQ(NewSsd(c, 1, &error), nullptr);
  EXPECT_NE(error.find("(4294967296) must be <= 4194304 erase blocks"), std::string::npos) << error;
  EXPECT_FALSE(CheckSsdConfig(c, nullptr, &error));
}

TEST(SsdTest, CheckSsdConfigGivesNewSsdsCapacityWithoutBuilding) {
  SsdConfig c = SmallSsdConfig();
  std::uint64_t capacity = 0;
  std::string error;
  ASSERT_TRUE(CheckSsdConfig(c, &capacity, &error)) << error;
  auto ssd = NewSsd(c, 1, &error);
  ASSERT_NE(ssd, nullptr) << error;
  EXPECT_EQ(capacity, ssd->capacity_bytes());
}

}  // namespace
}  // namespace devmodel

// The SSD under contention, with the mechanisms SsdConfig turns on: separate
// read and write pipelines (round robin arbitration), a per-queue limit,
// bounded program/erase suspend with a resume cost, independent plane reads,
// TLC page types, read retry, GC that yields between page moves (the SLC
// cache: ssd_slc_test.cc).
// Every expected time is derived from the configuration.
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
constexpr std::uint64_t kProgramUnitBytes = 2 * 16384;  // planes x page below

TimeNs Xfer(std::uint64_t bytes, std::uint32_t mb_s) { return (bytes * 1000 + mb_s - 1) / mb_s; }

// One program unit on every die (consecutive units on distinct dies), all
// programmed long before kSecond.
void FillOneUnitPerDie(SsdModel& ssd) {
  for (std::uint32_t d = 0; d < ssd.die_count(); ++d) {
    ssd.Submit(Rq(Op::kWrite, d * kProgramUnitBytes, kProgramUnitBytes), d);
  }
  ssd.Submit(Rq(Op::kFlush, 0, 0), 100);
}

// A QD1 read submitted right after 256 queued 64 KiB writes (16 MiB into a
// 1 MiB buffer). FIFO admission: the read waits for write slots, which wait
// for buffer space, which waits for programs. Round robin: the read is a
// QD1 read (it overtakes the programs booked but not started on its die).
TimeNs ReadLatencyBehindWrites(Arbitration arbitration, nlohmann::json* counters) {
  SsdConfig c = SmallSsdConfig();
  c.arbitration = arbitration;
  auto ssd = MakeSsd(c);
  FillOneUnitPerDie(*ssd);
  const std::uint64_t fresh = ssd->die_count() * kProgramUnitBytes;
  for (int i = 0; i < 256; ++i) {
    ssd->Submit(Rq(Op::kWrite, fresh + i * 65536ull, 65536, /*queue_id=*/1), kSecond);
  }
  const TimeNs done = testing::Final(*ssd, Rq(Op::kRead, 0, 4096, /*queue_id=*/2), kSecond);
  *counters = Counters(*ssd);
  return done - kSecond;
}

TEST(SsdContentionTest, RoundRobinReadBesideQueuedWritesIsAQd1Read) {
  const SsdConfig c = SmallSsdConfig();
  const TimeNs qd1 =
      c.controller_overhead_ns + c.page_read_ns + Xfer(4096, c.channel_mb_s) + Xfer(4096, 3200);
  nlohmann::json fifo_counters, rr_counters;
  const TimeNs fifo = ReadLatencyBehindWrites(Arbitration::kFifo, &fifo_counters);
  const TimeNs rr = ReadLatencyBehindWrites(Arbitration::kRoundRobin, &rr_counters);
  printf("[ measured ] 4K read behind 256 x 64K writes: fifo %.1f us, round robin %.1f us\n",
         fifo / 1e3, rr / 1e3);
  EXPECT_EQ(rr, qd1);
  EXPECT_EQ(rr_counters["read_admission_wait_ns"], 0);
  EXPECT_GT(rr_counters["write_buffer_stall_ns"], 0);  // the writes did stall
  // FIFO: 128 slots of 256 writes; the read starts after the first writes
  // that waited for buffer space, i.e. after at least one program, and may
  // then meet a program on its die (no suspend here).
  EXPECT_GT(fifo, c.page_program_ns);
  EXPECT_GT(fifo_counters["read_admission_wait_ns"].get<TimeNs>(), c.page_program_ns);
  EXPECT_GE(fifo, fifo_counters["read_admission_wait_ns"].get<TimeNs>() + qd1);
}

TEST(SsdContentionTest, ReadPipelineLimitCountsOnlyReads) {
  SsdConfig c = SmallSsdConfig();
  c.arbitration = Arbitration::kRoundRobin;
  c.max_inflight_reads = 2;
  c.max_inflight_writes = 1;
  c.host_link_mb_s = 0;
  auto ssd = MakeSsd(c);
  FillOneUnitPerDie(*ssd);
  const TimeNs now = kSecond;
  const auto done = testing::RunToFinal(*ssd, {{Rq(Op::kWrite, 1 << 20, 4096), now},
                                               {Rq(Op::kRead, 0 * kProgramUnitBytes, 4096), now},
                                               {Rq(Op::kRead, 1 * kProgramUnitBytes, 4096), now},
                                               {Rq(Op::kRead, 2 * kProgramUnitBytes, 4096), now},
                                               {Rq(Op::kWrite, 2 << 20, 4096), now}});
  const TimeNs w = done[0], a = done[1], b = done[2], third = done[3], w2 = done[4];
  const TimeNs qd1 = c.controller_overhead_ns + c.page_read_ns + Xfer(4096, c.channel_mb_s);
  EXPECT_EQ(a - now, qd1);  // the write's slot is not a read's
  EXPECT_EQ(third - std::min(a, b), qd1);  // starts when the first read frees a slot
  EXPECT_EQ(w - now, c.controller_overhead_ns);  // buffered at once
  EXPECT_EQ(w2 - w, c.controller_overhead_ns);   // the one write slot: after w
}

// 20 writes from queue 1, then one from queue 2, all at once, 8 write slots.
TimeNs OtherQueuesWriteLatency(std::uint32_t per_queue, TimeNs* fifth_of_queue_1) {
  SsdConfig c = SmallSsdConfig();
  c.arbitration = Arbitration::kRoundRobin;
  c.max_inflight_writes = 8;
  c.max_inflight_per_queue = per_queue;
  c.host_link_mb_s = 0;  // isolate admission from the shared link
  auto ssd = MakeSsd(c);
  const TimeNs now = kSecond;
  for (int i = 0; i < 20; ++i) {
    const TimeNs done = ssd->Submit(Rq(Op::kWrite, i * 4096ull, 4096, 1), now).deadline_ns;
    if (i == 4) *fifth_of_queue_1 = done - now;
  }
  return ssd->Submit(Rq(Op::kWrite, 1 << 20, 4096, 2), now).deadline_ns - now;
}

TEST(SsdContentionTest, PerQueueLimitLeavesSlotsForOtherQueues) {
  const TimeNs overhead = SmallSsdConfig().controller_overhead_ns;
  TimeNs fifth = 0;
  EXPECT_EQ(OtherQueuesWriteLatency(4, &fifth), overhead);  // 4 slots left for queue 2
  EXPECT_EQ(fifth, 2 * overhead);  // after queue 1's first write
  // Without a per-queue limit queue 1 fills all 8 slots, then books them
  // ahead: queue 2 comes after its 20 writes, 8 at a time.
  EXPECT_EQ(OtherQueuesWriteLatency(0, &fifth), 3 * overhead);
  EXPECT_EQ(fifth, overhead);
}

struct SuspendSetup {
  std::unique_ptr<SsdModel> ssd;
  std::uint64_t offset;  // a programmed unit on the die being programmed
  TimeNs program_start, program_end;
};

// Programs one fresh unit at kSecond and finds data on the same die.
SuspendSetup ProgramBesideData(const SsdConfig& c) {
  SuspendSetup s{MakeSsd(c), 0, 0, 0};
  FillOneUnitPerDie(*s.ssd);
  const std::uint64_t fresh = s.ssd->die_count() * kProgramUnitBytes;
  const TimeNs in_buffer =
      s.ssd->Submit(Rq(Op::kWrite, fresh, kProgramUnitBytes), kSecond).deadline_ns;
  const std::uint32_t die = s.ssd->DieOfOffset(fresh);
  for (std::uint32_t d = 0; d < s.ssd->die_count(); ++d) {
    if (s.ssd->DieOfOffset(d * kProgramUnitBytes) == die) s.offset = d * kProgramUnitBytes;
  }
  EXPECT_EQ(s.ssd->DieOfOffset(s.offset), die);
  s.program_start = in_buffer;  // channel transfer, then tPROG
  s.program_end = s.ssd->die_busy_until(die);
  EXPECT_EQ(s.program_end - s.program_start,
            Xfer(kProgramUnitBytes, c.channel_mb_s) + c.page_program_ns);
  return s;
}

TEST(SsdContentionTest, ReadMeetingAProgramPaysSuspendAndTheProgramAlsoResume) {
  SsdConfig c = SmallSsdConfig();
  c.suspend_enabled = true;
  c.suspend_latency_ns = 20000;
  c.resume_latency_ns = 7000;
  SuspendSetup s = ProgramBesideData(c);
  const TimeNs now = s.program_start + 100000;  // mid-program
  const std::uint32_t die = s.ssd->DieOfOffset(s.offset);
  const TimeNs read = c.page_read_ns + Xfer(4096, c.channel_mb_s);
  const TimeNs done = testing::Final(*s.ssd, Rq(Op::kRead, s.offset, 4096), now);
  EXPECT_EQ(done - now, c.controller_overhead_ns + c.suspend_latency_ns + read + Xfer(4096, 3200));
  EXPECT_EQ(s.ssd->die_busy_until(die),
            s.program_end + c.suspend_latency_ns + read + c.resume_latency_ns);
  EXPECT_EQ(Counters(*s.ssd)["suspends"], 1);
}

TEST(SsdContentionTest, ReadBeyondMaxSuspendsWaitsForTheProgram) {
  SsdConfig c = SmallSsdConfig();
  c.suspend_enabled = true;
  c.suspend_latency_ns = 20000;
  c.resume_latency_ns = 7000;
  c.max_suspends_per_op = 2;
  SuspendSetup s = ProgramBesideData(c);
  const std::uint32_t die = s.ssd->DieOfOffset(s.offset);
  const TimeNs read = c.page_read_ns + Xfer(4096, c.channel_mb_s);
  const TimeNs link = Xfer(4096, 3200);
  TimeNs now = s.program_start + 10000;
  for (std::uint32_t i = 0; i < c.max_suspends_per_op; ++i) {  // each suspends the program
    const TimeNs done = testing::Final(*s.ssd, Rq(Op::kRead, s.offset, 4096), now);
    EXPECT_EQ(done - now, c.controller_overhead_ns + c.suspend_latency_ns + read + link);
    now = done;
  }
  // The program ends later by suspend + read + resume per suspend...
  const TimeNs program_end =
      s.program_end + c.max_suspends_per_op * (c.suspend_latency_ns + read + c.resume_latency_ns);
  EXPECT_EQ(s.ssd->die_busy_until(die), program_end);
  ASSERT_LT(now + c.controller_overhead_ns, program_end);
  // ...and the next read waits for that end.
  const TimeNs done = testing::Final(*s.ssd, Rq(Op::kRead, s.offset, 4096), now);
  EXPECT_EQ(done, program_end + read + link);
  const auto j = Counters(*s.ssd);
  EXPECT_EQ(j["suspends"], c.max_suspends_per_op);
  EXPECT_EQ(j["suspends_refused"], 1);
}

// Two 4 KiB reads at once: offset 0 and `second`, on the same die.
TimeNs SecondReadLatency(bool independent_planes, std::uint64_t second) {
  SsdConfig c = SmallSsdConfig();
  c.independent_plane_reads = independent_planes;
  c.host_link_mb_s = 0;
  auto ssd = MakeSsd(c);
  FillOneUnitPerDie(*ssd);
  EXPECT_EQ(ssd->DieOfOffset(0), ssd->DieOfOffset(second));
  return testing::RunToFinal(*ssd, {{Rq(Op::kRead, 0, 4096), kSecond},
                                    {Rq(Op::kRead, second, 4096), kSecond}})[1] -
         kSecond;
}

TEST(SsdContentionTest, IndependentPlaneReadsOverlapAndShareTheChannel) {
  const SsdConfig c = SmallSsdConfig();
  const TimeNs channel = Xfer(4096, c.channel_mb_s);
  const std::uint64_t other_plane = c.page_bytes;  // second page of the program unit
  const std::uint64_t same_plane = 4096;           // same page
  // Sensing overlaps; the second transfer waits for the first.
  EXPECT_EQ(SecondReadLatency(true, other_plane),
            c.controller_overhead_ns + c.page_read_ns + 2 * channel);
  EXPECT_EQ(SecondReadLatency(true, same_plane),
            c.controller_overhead_ns + 2 * (c.page_read_ns + channel));
  EXPECT_EQ(SecondReadLatency(false, other_plane),
            c.controller_overhead_ns + 2 * (c.page_read_ns + channel));
}

TEST(SsdContentionTest, RejectsContentionKeysOutOfRangeOrMode) {
  std::string error;
  SsdConfig c = SmallSsdConfig();
  c.max_inflight_reads = 4;  // arbitration stays fifo
  EXPECT_EQ(NewSsd(c, 1, &error), nullptr);
  EXPECT_EQ(error,
            "ssd.max_inflight_reads (4) applies only with ssd.arbitration = \"round_robin\" "
            "(0 with \"fifo\")");
  c.arbitration = Arbitration::kRoundRobin;
  c.max_inflight_per_queue = 70000;
  EXPECT_FALSE(CheckSsdConfig(c, nullptr, &error));
  EXPECT_EQ(error, "ssd.max_inflight_per_queue must be in [0, 65536]");
  c = SmallSsdConfig();
  c.max_suspends_per_op = 65536;
  EXPECT_FALSE(CheckSsdConfig(c, nullptr, &error));
  EXPECT_EQ(error, "ssd.max_suspends_per_op must be in [0, 65535]");
}

TEST(SsdContentionTest, ProfileKeysReachTheModel) {
  const std::string head =
      "[device]\nmodel = \"ssd\"\n[ssd]\nchannels = 4\ndies_per_channel = 2\n"
      "blocks_per_plane = 64\npages_per_block = 64\n";
  std::string error;
  auto ok = LoadProfileFromString(head +
                                      "arbitration = \"round_robin\"\nmax_inflight_reads = 64\n"
                                      "max_inflight_writes = 32\nmax_inflight_per_queue = 16\n"
                                      "suspend = true\nresume_latency_us = 5.5\n"
                                      "max_suspends_per_op = 3\nindependent_plane_reads = true\n",
                                  "ok.toml", 1, &error);
  EXPECT_NE(ok, nullptr) << error;
  EXPECT_EQ(LoadProfileFromString(head + "max_inflight_writes = 8\n", "bad.toml", 1, &error),
            nullptr);
  EXPECT_EQ(error,
            "bad.toml:8: ssd.max_inflight_writes (8) applies only with ssd.arbitration = "
            "\"round_robin\" (0 with \"fifo\")");
  const std::string ref = ProfileKeyReference();
  EXPECT_NE(ref.find("ssd.arbitration: one of \"fifo\" \"round_robin\""), std::string::npos);
  EXPECT_NE(ref.find("ssd.max_suspends_per_op: an integer in [0, 65535] count (0 = unlimited)"),
            std::string::npos);
}

// One die on one channel, write-through, no host link: program units follow
// each other on one timeline and a read's time is the die's.
SsdConfig OneDieConfig() {
  SsdConfig c = SmallSsdConfig();
  c.channels = 1;
  c.dies_per_channel = 1;
  c.write_buffer_bytes = 0;
  c.host_link_mb_s = 0;
  return c;
}

TEST(SsdContentionTest, PageTypeSetsReadAndProgramTimes) {
  SsdConfig c = OneDieConfig();
  c.page_read_lower_ns = 40000;
  c.page_read_middle_ns = 0;  // page_read_ns
  c.page_read_upper_ns = 70000;
  c.page_program_lower_ns = 300000;
  c.page_program_middle_ns = 600000;
  c.page_program_upper_ns = 0;  // page_program_ns
  auto ssd = MakeSsd(c);
  const TimeNs reads[3] = {c.page_read_lower_ns, c.page_read_ns, c.page_read_upper_ns};
  const TimeNs programs[3] = {c.page_program_lower_ns, c.page_program_middle_ns, c.page_program_ns};
  // Program units 0, 1, 2 of the first block: lower, middle, upper pages.
  const TimeNs xfer = Xfer(kProgramUnitBytes, c.channel_mb_s);
  TimeNs expected = kSecond + c.controller_overhead_ns;
  for (int unit = 0; unit < 3; ++unit) {
    expected += xfer + programs[unit];
    EXPECT_EQ(ssd->Submit(Rq(Op::kWrite, unit * kProgramUnitBytes, kProgramUnitBytes), kSecond)
                  .deadline_ns,
              expected);
  }
  for (int unit = 0; unit < 3; ++unit) {
    const TimeNs now = 2 * kSecond + unit * kSecond / 1000;
    EXPECT_EQ(testing::Final(*ssd, Rq(Op::kRead, unit * kProgramUnitBytes, 4096), now) - now,
              c.controller_overhead_ns + reads[unit] + Xfer(4096, c.channel_mb_s))
        << "unit " << unit;
  }
}

TEST(SsdContentionTest, ReadRetryAddsSeededSensingRounds) {
  SsdConfig c = OneDieConfig();
  c.read_retry_probability = 1;
  c.read_retry_ns = 30000;
  c.read_retry_max_rounds = 3;
  auto always = MakeSsd(c);
  always->Submit(Rq(Op::kWrite, 0, kProgramUnitBytes), 0);
  const TimeNs base = c.controller_overhead_ns + c.page_read_ns + Xfer(4096, c.channel_mb_s);
  for (int i = 0; i < 10; ++i) {
    const TimeNs now = kSecond + i * kSecond / 1000;
    EXPECT_EQ(testing::Final(*always, Rq(Op::kRead, 0, 4096), now) - now,
              base + c.read_retry_max_rounds * c.read_retry_ns);
  }
  EXPECT_EQ(Counters(*always)["reads_retried"], 10);
  EXPECT_EQ(Counters(*always)["read_retry_rounds"], 10 * c.read_retry_max_rounds);
  // Probability p per round: about p of the reads retry, each by whole rounds.
  c.read_retry_probability = 0.25;
  c.read_retry_max_rounds = 4;
  auto sometimes = MakeSsd(c);
  sometimes->Submit(Rq(Op::kWrite, 0, kProgramUnitBytes), 0);
  constexpr int kReads = 4000;
  int retried = 0;
  for (int i = 0; i < kReads; ++i) {
    const TimeNs now = kSecond + i * kSecond / 1000;
    const TimeNs extra = testing::Final(*sometimes, Rq(Op::kRead, 0, 4096), now) - now - base;
    EXPECT_EQ(extra % c.read_retry_ns, 0u);
    EXPECT_LE(extra / c.read_retry_ns, c.read_retry_max_rounds);
    retried += extra != 0;
  }
  EXPECT_NEAR(retried / double{kReads}, c.read_retry_probability, 0.03);
}

// A read 1 us after the idle point of a drive whose background GC moves one
// unit (then erases its victim). Tiny geometry: one die, one plane, 4 pages
// of one mapping unit per block; the victim is block 0 with one valid unit.
TimeNs ReadLatencyDuringGc(bool gc_yield, SsdConfig* config) {
  SsdConfig& c = *config;
  c = OneDieConfig();
  c.planes_per_die = 1;
  c.pages_per_block = 4;
  c.mapping_unit_bytes = 16384;
  c.blocks_per_plane = 12;
  c.capacity_bytes = 8 * 16384;      // two blocks of data
  c.gc_background_free_blocks = 11;  // below it as soon as block 1 opens
  c.gc_yield = gc_yield;
  auto ssd = MakeSsd(c);
  for (int unit = 0; unit < 8; ++unit) ssd->Submit(Rq(Op::kWrite, unit * 16384ull, 16384), 0);
  // Trim three units of block 0: it becomes the victim, with one unit to move.
  const TimeNs trimmed = ssd->Submit(Rq(Op::kTrim, 0, 3 * 16384), kSecond).deadline_ns;
  const TimeNs idle_from = trimmed + c.gc_idle_delay_ns;
  const TimeNs now = idle_from + 1000;
  const TimeNs done = testing::Final(*ssd, Rq(Op::kRead, 4 * 16384, 4096), now);
  const auto j = Counters(*ssd);
  EXPECT_EQ(j["gc_units_moved"], 1);
  EXPECT_EQ(j["erases"], 1);
  return done - idle_from;
}

TEST(SsdContentionTest, GcYieldLetsAReadInAfterOnePageMove) {
  SsdConfig c;
  const TimeNs batched = ReadLatencyDuringGc(false, &c);
  const TimeNs page_move = c.page_read_ns + Xfer(16384, c.channel_mb_s);
  const TimeNs program = Xfer(16384, c.channel_mb_s) + c.page_program_ns;
  const TimeNs read = c.page_read_ns + Xfer(16384, c.channel_mb_s);  // one whole mapping unit
  // Booked as one operation, the read waits for the move and the program.
  EXPECT_EQ(batched, page_move + program + read);
  // Yielding, it waits for the page move in progress only.
  EXPECT_EQ(ReadLatencyDuringGc(true, &c), page_move + read);
}

TEST(SsdContentionTest, RejectsPageTypeAndRetryKeysOutOfRange) {
  std::string error;
  SsdConfig c = SmallSsdConfig();
  c.read_retry_probability = 0.1;  // rounds left at 0
  EXPECT_FALSE(CheckSsdConfig(c, nullptr, &error));
  EXPECT_EQ(error,
            "ssd.read_retry_max_rounds must be in [1, 64] when ssd.read_retry_probability > 0");
  c.read_retry_probability = 1.5;
  EXPECT_FALSE(CheckSsdConfig(c, nullptr, &error));
  EXPECT_EQ(error, "ssd.read_retry_probability must be in [0, 1]");
  c = SmallSsdConfig();
  c.page_read_upper_ns = 200000000;
  EXPECT_FALSE(CheckSsdConfig(c, nullptr, &error));
  EXPECT_EQ(error, "ssd.page_read_upper_us must be in [0, 100000]");
  const std::string ok =
      "[device]\nmodel = \"ssd\"\n[ssd]\nchannels = 4\ndies_per_channel = 2\n"
      "blocks_per_plane = 64\npages_per_block = 64\npage_read_lower_us = 40\n"
      "page_read_middle_us = 50\npage_read_upper_us = 70\npage_program_lower_us = 300\n"
      "page_program_middle_us = 500\npage_program_upper_us = 900\n"
      "read_retry_probability = 0.01\nread_retry_us = 40\nread_retry_max_rounds = 4\n"
      "gc_yield = true\n";
  EXPECT_NE(LoadProfileFromString(ok, "ok.toml", 1, &error), nullptr) << error;
}

}  // namespace
}  // namespace devmodel

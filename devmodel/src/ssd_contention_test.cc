// The SSD under contention, with the mechanisms SsdConfig turns on: separate
// read and write pipelines (round robin arbitration), a per-queue limit,
// bounded program/erase suspend with a resume cost, independent plane reads.
// Every expected time is derived from the configuration.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "devmodel/profile.h"
#include "devmodel/ssd.h"
#include "ssd_model.h"

namespace devmodel {
namespace {

using internal::SsdModel;

constexpr TimeNs kSecond = 1000000000;
constexpr std::uint64_t kProgramUnitBytes = 2 * 16384;  // planes x page below

SsdConfig SmallConfig() {
  SsdConfig c;
  c.channels = 4;
  c.dies_per_channel = 2;
  c.planes_per_die = 2;
  c.blocks_per_plane = 64;
  c.pages_per_block = 64;
  c.page_bytes = 16384;
  c.page_read_ns = 50000;
  c.page_program_ns = 500000;
  c.block_erase_ns = 3000000;
  c.channel_mb_s = 800;
  c.host_link_mb_s = 3200;
  c.controller_overhead_ns = 4000;
  c.write_buffer_bytes = 1 << 20;
  return c;
}

std::unique_ptr<SsdModel> Make(const SsdConfig& c) {
  std::string error;
  auto device = NewSsd(c, 1, &error);
  EXPECT_NE(device, nullptr) << error;
  return std::unique_ptr<SsdModel>(static_cast<SsdModel*>(device.release()));
}

Request Rq(Op op, std::uint64_t offset, std::uint64_t length, std::uint32_t queue_id = 0) {
  Request r;
  r.op = op;
  r.offset_bytes = offset;
  r.length_bytes = length;
  r.queue_id = queue_id;
  return r;
}

nlohmann::json Counters(const Device& d) { return nlohmann::json::parse(d.CountersJson()); }

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
  SsdConfig c = SmallConfig();
  c.arbitration = arbitration;
  auto ssd = Make(c);
  FillOneUnitPerDie(*ssd);
  const std::uint64_t fresh = ssd->die_count() * kProgramUnitBytes;
  for (int i = 0; i < 256; ++i) {
    ssd->Submit(Rq(Op::kWrite, fresh + i * 65536ull, 65536, /*queue_id=*/1), kSecond);
  }
  const TimeNs done = ssd->Submit(Rq(Op::kRead, 0, 4096, /*queue_id=*/2), kSecond).deadline_ns;
  *counters = Counters(*ssd);
  return done - kSecond;
}

TEST(SsdContentionTest, RoundRobinReadBesideQueuedWritesIsAQd1Read) {
  const SsdConfig c = SmallConfig();
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
  SsdConfig c = SmallConfig();
  c.arbitration = Arbitration::kRoundRobin;
  c.max_inflight_reads = 2;
  c.max_inflight_writes = 1;
  c.host_link_mb_s = 0;
  auto ssd = Make(c);
  FillOneUnitPerDie(*ssd);
  const TimeNs now = kSecond;
  const TimeNs w = ssd->Submit(Rq(Op::kWrite, 1 << 20, 4096), now).deadline_ns;
  const TimeNs a = ssd->Submit(Rq(Op::kRead, 0 * kProgramUnitBytes, 4096), now).deadline_ns;
  const TimeNs b = ssd->Submit(Rq(Op::kRead, 1 * kProgramUnitBytes, 4096), now).deadline_ns;
  const TimeNs third = ssd->Submit(Rq(Op::kRead, 2 * kProgramUnitBytes, 4096), now).deadline_ns;
  const TimeNs w2 = ssd->Submit(Rq(Op::kWrite, 2 << 20, 4096), now).deadline_ns;
  const TimeNs qd1 = c.controller_overhead_ns + c.page_read_ns + Xfer(4096, c.channel_mb_s);
  EXPECT_EQ(a - now, qd1);  // the write's slot is not a read's
  EXPECT_EQ(third - std::min(a, b), qd1);  // starts when the first read frees a slot
  EXPECT_EQ(w - now, c.controller_overhead_ns);  // buffered at once
  EXPECT_EQ(w2 - w, c.controller_overhead_ns);   // the one write slot: after w
}

// 20 writes from queue 1, then one from queue 2, all at once, 8 write slots.
TimeNs OtherQueuesWriteLatency(std::uint32_t per_queue, TimeNs* fifth_of_queue_1) {
  SsdConfig c = SmallConfig();
  c.arbitration = Arbitration::kRoundRobin;
  c.max_inflight_writes = 8;
  c.max_inflight_per_queue = per_queue;
  c.host_link_mb_s = 0;  // isolate admission from the shared link
  auto ssd = Make(c);
  const TimeNs now = kSecond;
  for (int i = 0; i < 20; ++i) {
    const TimeNs done = ssd->Submit(Rq(Op::kWrite, i * 4096ull, 4096, 1), now).deadline_ns;
    if (i == 4) *fifth_of_queue_1 = done - now;
  }
  return ssd->Submit(Rq(Op::kWrite, 1 << 20, 4096, 2), now).deadline_ns - now;
}

TEST(SsdContentionTest, PerQueueLimitLeavesSlotsForOtherQueues) {
  const TimeNs overhead = SmallConfig().controller_overhead_ns;
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
  SuspendSetup s{Make(c), 0, 0, 0};
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
  SsdConfig c = SmallConfig();
  c.suspend_enabled = true;
  c.suspend_latency_ns = 20000;
  c.resume_latency_ns = 7000;
  SuspendSetup s = ProgramBesideData(c);
  const TimeNs now = s.program_start + 100000;  // mid-program
  const std::uint32_t die = s.ssd->DieOfOffset(s.offset);
  const TimeNs read = c.page_read_ns + Xfer(4096, c.channel_mb_s);
  const TimeNs done = s.ssd->Submit(Rq(Op::kRead, s.offset, 4096), now).deadline_ns;
  EXPECT_EQ(done - now,
            c.controller_overhead_ns + c.suspend_latency_ns + read + Xfer(4096, 3200));
  EXPECT_EQ(s.ssd->die_busy_until(die),
            s.program_end + c.suspend_latency_ns + read + c.resume_latency_ns);
  EXPECT_EQ(Counters(*s.ssd)["suspends"], 1);
}

TEST(SsdContentionTest, ReadBeyondMaxSuspendsWaitsForTheProgram) {
  SsdConfig c = SmallConfig();
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
    const TimeNs done = s.ssd->Submit(Rq(Op::kRead, s.offset, 4096), now).deadline_ns;
    EXPECT_EQ(done - now, c.controller_overhead_ns + c.suspend_latency_ns + read + link);
    now = done;
  }
  // The program ends later by suspend + read + resume per suspend...
  const TimeNs program_end =
      s.program_end + c.max_suspends_per_op * (c.suspend_latency_ns + read + c.resume_latency_ns);
  EXPECT_EQ(s.ssd->die_busy_until(die), program_end);
  ASSERT_LT(now + c.controller_overhead_ns, program_end);
  // ...and the next read waits for that end.
  const TimeNs done = s.ssd->Submit(Rq(Op::kRead, s.offset, 4096), now).deadline_ns;
  EXPECT_EQ(done, program_end + read + link);
  const auto j = Counters(*s.ssd);
  EXPECT_EQ(j["suspends"], c.max_suspends_per_op);
  EXPECT_EQ(j["suspends_refused"], 1);
}

// Two 4 KiB reads at once: offset 0 and `second`, on the same die.
TimeNs SecondReadLatency(bool independent_planes, std::uint64_t second) {
  SsdConfig c = SmallConfig();
  c.independent_plane_reads = independent_planes;
  c.host_link_mb_s = 0;
  auto ssd = Make(c);
  FillOneUnitPerDie(*ssd);
  EXPECT_EQ(ssd->DieOfOffset(0), ssd->DieOfOffset(second));
  ssd->Submit(Rq(Op::kRead, 0, 4096), kSecond);
  return ssd->Submit(Rq(Op::kRead, second, 4096), kSecond).deadline_ns - kSecond;
}

TEST(SsdContentionTest, IndependentPlaneReadsOverlapAndShareTheChannel) {
  const SsdConfig c = SmallConfig();
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
  SsdConfig c = SmallConfig();
  c.max_inflight_reads = 4;  // arbitration stays fifo
  EXPECT_EQ(NewSsd(c, 1, &error), nullptr);
  EXPECT_EQ(error,
            "ssd.max_inflight_reads (4) applies only with ssd.arbitration = \"round_robin\" "
            "(0 with \"fifo\")");
  c.arbitration = Arbitration::kRoundRobin;
  c.max_inflight_per_queue = 70000;
  EXPECT_FALSE(CheckSsdConfig(c, nullptr, &error));
  EXPECT_EQ(error, "ssd.max_inflight_per_queue must be in [0, 65536]");
  c = SmallConfig();
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

}  // namespace
}  // namespace devmodel

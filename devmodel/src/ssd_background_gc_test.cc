// Background (idle-time) GC against the commands that end the idle time:
// with gc_background_preemptible a host program waits at most for the GC
// step in progress on its die (one GC program unit's page reads and program,
// or one erase), and GC resumes its victim in the next idle time; without
// it the host program waits for every move of the victims booked at once.
// Every bound is derived from the configuration.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "devmodel/ssd.h"
#include "ssd_model.h"
#include "ssd_test_util.h"

namespace devmodel {
namespace {

using testing::Counters;
using testing::MakeSsd;
using testing::Rq;

constexpr TimeNs kSecond = 1000000000;

TimeNs Xfer(std::uint64_t bytes, std::uint32_t mb_s) { return (bytes * 1000 + mb_s - 1) / mb_s; }

// One die on one channel (the host program cannot go to another die), the
// small drive's 2 planes x 64 pages of 16 KiB per block (512 units of 4 KiB)
// and 64 blocks, 96 of its 128 MiB exported, in steady state (GC due from
// the first host program), no host link. The idle delay, 20 ms, outlasts
// the GC a host program unit paces (at most the background mark's 8 program
// units' moves), so an idle period starts with the die free.
SsdConfig OneDieSteadyConfig(bool preemptible) {
  SsdConfig c = testing::SmallSsdConfig();
  c.channels = 1;
  c.dies_per_channel = 1;
  c.host_link_mb_s = 0;
  c.gc_idle_delay_ns = 20000000;
  c.capacity_bytes = 96ull << 20;
  c.precondition = Precondition::kSteady;
  c.gc_yield = true;
  c.gc_background_preemptible = preemptible;
  return c;
}

constexpr std::uint32_t kUnitsPerProgram = 2 * 16384 / 4096;  // planes x page / unit
constexpr std::uint64_t kProgramBytes = 2 * 16384;

// The longest background GC step: a GC program unit whose units all come
// from distinct pages (one page read and transfer each), the unit's
// transfer and its program; or an erase.
TimeNs LongestGcStep(const SsdConfig& c) {
  const TimeNs unit = kUnitsPerProgram * (c.page_read_ns + Xfer(16384, c.channel_mb_s)) +
                      Xfer(kProgramBytes, c.channel_mb_s) + c.page_program_ns;
  return std::max(unit, c.block_erase_ns);
}

std::uint64_t FreeBlocks(const Device& d) { return Counters(d)["die_free_blocks"][0]; }

// A 4 KiB write and a flush 1 us after the idle point (the drive idle for
// gc_idle_delay); returns the flush's completion - submission and sets
// *moved to the GC moves booked by that write and flush. A program unit
// written and flushed at t = 0 makes GC due.
TimeNs FlushAfterIdle(const SsdConfig& c, std::uint64_t* moved) {
  auto ssd = MakeSsd(c);
  ssd->Submit(Rq(Op::kWrite, 0, kProgramBytes), 0);
  const TimeNs busy_end = ssd->Submit(Rq(Op::kFlush, 0, 0), 0).deadline_ns;
  EXPECT_LT(FreeBlocks(*ssd), c.gc_background_free_blocks) << "GC is not due: no test";
  const std::uint64_t moved_before = Counters(*ssd)["gc_units_moved"];
  const TimeNs now = busy_end + c.gc_idle_delay_ns + 1000;
  ssd->Submit(Rq(Op::kWrite, 1 << 20, 4096), now);
  const TimeNs done = ssd->Submit(Rq(Op::kFlush, 0, 0), now).deadline_ns;
  *moved = Counters(*ssd)["gc_units_moved"].get<std::uint64_t>() - moved_before;
  return done - now;
}

TEST(SsdBackgroundGcTest, HostProgramAfterIdleWaitsAtMostOneGcStep) {
  const SsdConfig c = OneDieSteadyConfig(true);
  std::uint64_t moved = 0;
  const TimeNs flush = FlushAfterIdle(c, &moved);
  // The flush's controller overhead, the step in progress, then the padded
  // host unit's transfer and program.
  const TimeNs bound = c.controller_overhead_ns + LongestGcStep(c) +
                       Xfer(kProgramBytes, c.channel_mb_s) + c.page_program_ns;
  EXPECT_LE(flush, bound);
  EXPECT_GE(flush, c.controller_overhead_ns + c.page_program_ns);  // the host program itself
}

TEST(SsdBackgroundGcTest, WithoutPreemptionTheHostProgramWaitsForTheWholeVictim) {
  const SsdConfig c = OneDieSteadyConfig(false);
  std::uint64_t moved = 0;
  const TimeNs flush = FlushAfterIdle(c, &moved);
  // Every GC program unit of the victims booked at the idle point (1 us
  // before the write) is programmed before the host's: at least their
  // programs' time, less the 1 us.
  const std::uint64_t gc_programs = moved / kUnitsPerProgram;
  EXPECT_GE(flush + 1000, gc_programs * c.page_program_ns + c.page_program_ns);
  EXPECT_GT(flush, 2 * LongestGcStep(c));  // the case the mechanism is for
}

// Idle windows of `kWindow` past the idle delay, each ended by a 4 KiB
// read: the read waits at most one GC step, and GC, resumed window after
// window, brings the die back to the background mark.
TEST(SsdBackgroundGcTest, GcProgressesOnlyInIdleTimeAndResumesItsVictim) {
  const SsdConfig c = OneDieSteadyConfig(true);
  auto ssd = MakeSsd(c);
  ssd->Submit(Rq(Op::kWrite, 0, kProgramBytes), 0);
  TimeNs last = ssd->Submit(Rq(Op::kFlush, 0, 0), 0).deadline_ns;
  const std::uint64_t free0 = FreeBlocks(*ssd);
  ASSERT_LT(free0, c.gc_background_free_blocks);
  // Work to reach the mark, at most: every missing block a victim with all
  // but one unit valid: a step per program unit, one for the last units
  // (no program yet), one for its erase.
  const std::uint64_t slots_per_block = 64 * kUnitsPerProgram;
  const std::uint64_t max_steps =
      (c.gc_background_free_blocks - free0) * (slots_per_block / kUnitsPerProgram + 2);
  constexpr TimeNs kWindow = 20000000;  // 20 ms
  const TimeNs step = LongestGcStep(c);
  // Steps follow each other from the idle point, none longer than `step`:
  // a window books at least kWindow / step of them.
  const std::uint64_t max_windows = max_steps / (kWindow / step) + 1;
  // Moves a window books, at most: a program unit per program that starts
  // in it, and fewer than a unit before each erase that starts in it.
  const std::uint64_t max_window_moves =
      (kWindow / c.page_program_ns + 1) * kUnitsPerProgram +
      (kWindow / c.block_erase_ns + 1) * (kUnitsPerProgram - 1);
  const TimeNs read_alone = c.controller_overhead_ns + c.page_read_ns + Xfer(4096, c.channel_mb_s);
  std::uint64_t windows = 0, moved_before = 0;
  while (FreeBlocks(*ssd) < c.gc_background_free_blocks && windows < max_windows) {
    const TimeNs now = last + c.gc_idle_delay_ns + kWindow;
    const TimeNs done = testing::Final(*ssd, Rq(Op::kRead, 4096 * windows, 4096), now);
    EXPECT_LE(done - now, step + read_alone) << "window " << windows;
    const std::uint64_t moved = Counters(*ssd)["gc_units_moved"];
    EXPECT_GE(moved, moved_before);
    // Booked only up to the window's end: a window moves at most its share.
    EXPECT_LE(moved - moved_before, max_window_moves);
    moved_before = moved;
    last = std::max(done, now);
    ++windows;
  }
  EXPECT_EQ(FreeBlocks(*ssd), c.gc_background_free_blocks);
  EXPECT_GT(windows, 1u) << "one window did it all: the victims were not resumed";
  EXPECT_GE(Counters(*ssd)["gc_background_runs"], c.gc_background_free_blocks - free0);
}

}  // namespace
}  // namespace devmodel

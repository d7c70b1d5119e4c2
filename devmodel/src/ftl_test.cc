#include "ftl.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "rng.h"

namespace devmodel::internal {

// Reads (and, for negative controls, breaks) what the victim search runs on.
class FtlTestPeer {
 public:
  static bool Closed(const Ftl& ftl, std::uint32_t block) {
    return (ftl.blocks_[block].key & Ftl::kNotClosed) == 0;
  }
  static std::uint64_t Key(const Ftl& ftl, std::uint32_t block) { return ftl.blocks_[block].key; }
  static std::uint32_t Valid(std::uint64_t key) { return Ftl::Valid(key); }
  static std::uint32_t GroupsPerDie(const Ftl& ftl) { return ftl.groups_per_die_; }
  static std::uint64_t& GroupMin(Ftl& ftl, std::uint32_t die, std::uint32_t group) {
    return ftl.group_min_[die * ftl.groups_per_die_ + group];
  }
  static std::uint64_t GroupMin(const Ftl& ftl, std::uint32_t die, std::uint32_t group) {
    return ftl.group_min_[die * ftl.groups_per_die_ + group];
  }
  static std::uint32_t FindVictim(const Ftl& ftl, std::uint32_t die) { return ftl.FindVictim(die); }
  // Units GC can still place on `die` without taking a free block.
  static std::uint32_t GcRoom(const Ftl& ftl, std::uint32_t die) {
    const auto& d = ftl.dies_[die];
    return d.gc_block == Ftl::kNoBlock ? 0 : ftl.g_.slots_per_block - d.gc_ptr;
  }
};

namespace {

FtlGeometry Geometry(double over_provisioning) {
  FtlGeometry g;
  g.dies = 4;
  g.blocks_per_die = 1024;
  g.slots_per_block = 64;
  g.slots_per_program = 4;
  g.slots_per_page = 2;
  const double raw = static_cast<double>(g.dies) * g.blocks_per_die * g.slots_per_block;
  g.exported_slots = static_cast<std::uint64_t>(raw / (1.0 + over_provisioning));
  g.gc_foreground_free_blocks = 2;
  return g;
}

// Principal branch of Lambert W for x in [-1/e, 0), by Halley iteration.
double LambertW0(double x) {
  double w = -0.5;
  for (int i = 0; i < 100; ++i) {
    const double e = std::exp(w);
    const double f = w * e - x;
    const double next = w - f / (e * (w + 1) - (w + 2) * f / (2 * w + 2));
    if (std::fabs(next - w) < 1e-15) return next;
    w = next;
  }
  return w;
}

// Write amplification of FIFO cleaning under uniform random writes
// (Desnoyers, "Analytic models of SSD write performance", TOS 2014;
// Hu et al., SYSTOR 2009): A = a / (a + W0(-a e^-a)), a = raw / exported.
// Greedy cleaning must do at least as well.
double FifoBound(double a) { return a / (a + LambertW0(-a * std::exp(-a))); }

TEST(FtlTest, MapsTrimsAndCountsPadding) {
  FtlGeometry g = Geometry(0.25);
  Ftl ftl(g, nullptr);
  EXPECT_EQ(ftl.Lookup(5), Ftl::kUnmapped);
  ftl.Write(5);
  EXPECT_NE(ftl.Lookup(5), Ftl::kUnmapped);
  EXPECT_TRUE(ftl.IsPendingHost(ftl.Lookup(5)));
  ftl.FlushPending();
  EXPECT_FALSE(ftl.IsPendingHost(ftl.Lookup(5)));
  EXPECT_EQ(ftl.counters().padding_slots, 3u);
  ftl.Trim(5);
  EXPECT_EQ(ftl.Lookup(5), Ftl::kUnmapped);
  EXPECT_EQ(ftl.counters().trimmed_slots, 1u);
}

// One die; block 0 written full, then half trimmed: the only closed block,
// so the victim, with 32 of 64 units valid.
Ftl* HalfValidVictim(Ftl* ftl) {
  for (std::uint64_t lpn = 0; lpn < 64 + 4; ++lpn) ftl->Write(lpn);
  ftl->FlushPending();
  for (std::uint64_t lpn = 0; lpn < 32; ++lpn) ftl->Trim(lpn);
  return ftl;
}

TEST(FtlTest, CollectStepCanLeaveTheEraseToTheNextCall) {
  FtlGeometry g = Geometry(0.25);
  g.dies = 1;
  g.exported_slots = 512;
  Ftl together(g, nullptr), apart(g, nullptr);
  HalfValidVictim(&together);
  HalfValidVictim(&apart);
  const FtlCounters before = apart.counters();
  ASSERT_TRUE(together.CollectStep(0, 1000));
  EXPECT_EQ(together.counters().gc_slots_moved - before.gc_slots_moved, 32u);
  EXPECT_EQ(together.counters().erases - before.erases, 1u);
  // erase_alone: the moves, then the erase in a call of its own.
  ASSERT_TRUE(apart.CollectStep(0, 1000, /*erase_alone=*/true));
  EXPECT_EQ(apart.counters().gc_slots_moved - before.gc_slots_moved, 32u);
  EXPECT_EQ(apart.counters().erases, before.erases);
  const std::uint32_t free_after_moves = apart.free_blocks(0);
  ASSERT_TRUE(apart.CollectStep(0, 1000, /*erase_alone=*/true));
  EXPECT_EQ(apart.counters().gc_slots_moved - before.gc_slots_moved, 32u);
  EXPECT_EQ(apart.counters().erases - before.erases, 1u);
  EXPECT_EQ(apart.free_blocks(0), free_after_moves + 1);
  EXPECT_EQ(apart.free_blocks(0), together.free_blocks(0));
  for (std::uint64_t lpn = 32; lpn < 64; ++lpn) EXPECT_EQ(apart.Lookup(lpn), together.Lookup(lpn));
}

TEST(FtlTest, SteadyStateWafFallsWithOverProvisioningAndBeatsFifoBound) {
  double previous = 1e9;
  for (double op : {0.07, 0.14, 0.28}) {
    const FtlGeometry g = Geometry(op);
    Ftl ftl(g, nullptr);
    Rng rng(42);
    const std::uint64_t n = g.exported_slots;
    for (std::uint64_t lpn = 0; lpn < n; ++lpn) ftl.Write(lpn);
    for (std::uint64_t i = 0; i < 4 * n; ++i) ftl.Write(rng.Below(n));  // reach steady state
    const FtlCounters before = ftl.counters();
    for (std::uint64_t i = 0; i < 4 * n; ++i) ftl.Write(rng.Below(n));
    const FtlCounters& after = ftl.counters();
    const double waf =
        static_cast<double>(after.nand_slots_programmed - before.nand_slots_programmed) /
        static_cast<double>(after.host_slots_written - before.host_slots_written);
    const double a =
        static_cast<double>(g.dies) * g.blocks_per_die * g.slots_per_block / static_cast<double>(n);
    const double bound = FifoBound(a);
    printf("[ measured ] OP %2.0f%% (raw/exported %.3f): greedy WAF %.3f, FIFO bound %.3f\n",
           op * 100, a, waf, bound);
    EXPECT_GT(waf, 1.0);
    EXPECT_LT(waf, previous);
    EXPECT_LT(waf, bound);
    EXPECT_EQ(after.dropped_writes, 0u);
    previous = waf;
  }
}

// Regression: a host overwrite that runs foreground GC (the die is out of
// free blocks) must not let GC move the copy it has just invalidated. An
// earlier version did: the victim's valid count dropped twice, GC stopped one
// unit early and erased a block that still held a mapped unit.
TEST(FtlTest, MappingStaysConsistentUnderForegroundGc) {
  FtlGeometry g;
  g.dies = 2;
  g.blocks_per_die = 32;
  g.slots_per_block = 16;
  g.slots_per_program = 4;
  g.slots_per_page = 2;
  g.exported_slots = 2 * 32 * 16 * 4 / 5;
  g.gc_foreground_free_blocks = 2;
  g.gc_background_free_blocks = 4;
  Ftl ftl(g, nullptr);
  for (std::uint64_t lpn = 0; lpn < g.exported_slots; ++lpn) ftl.Write(lpn);
  Rng rng(1);
  std::string error;
  for (int i = 0; i < 100000; ++i) {
    const std::uint64_t lpn = rng.Below(g.exported_slots);
    if (rng.Below(50) == 0) {
      ftl.Trim(lpn);
    } else {
      ftl.Write(lpn);
    }
    if (i % 500 == 0) {
      ASSERT_TRUE(ftl.CheckConsistency(&error)) << "after op " << i << ": " << error;
    }
  }
  EXPECT_GT(ftl.counters().gc_runs, 1000u);
  EXPECT_TRUE(ftl.CheckConsistency(&error)) << error;
}

// Victim order uses a 40-bit recency clock; renumbering at the wrap keeps it.
TEST(FtlTest, RecencyClockWrapKeepsVictimOrder) {
  const FtlGeometry g = Geometry(0.14);
  Ftl plain(g, nullptr), wrapping(g, nullptr);
  wrapping.set_recency_clock_for_testing((std::uint64_t{1} << 40) - 3000);
  Rng rng(5);
  for (std::uint64_t lpn = 0; lpn < g.exported_slots; ++lpn) {
    plain.Write(lpn);
    wrapping.Write(lpn);
  }
  for (std::uint64_t i = 0; i < g.exported_slots; ++i) {
    const std::uint64_t lpn = rng.Below(g.exported_slots);
    plain.Write(lpn);
    wrapping.Write(lpn);
  }
  EXPECT_EQ(plain.counters().gc_slots_moved, wrapping.counters().gc_slots_moved);
  for (std::uint64_t lpn = 0; lpn < g.exported_slots; ++lpn) {
    ASSERT_EQ(plain.Lookup(lpn), wrapping.Lookup(lpn)) << lpn;
  }
  std::string error;
  EXPECT_TRUE(wrapping.CheckConsistency(&error)) << error;
}

// Everything observable of two FTLs: every unit's place, the counters, the
// free blocks and the closed blocks' valid units.
void ExpectSameFtl(const Ftl& a, const Ftl& b, const char* when) {
  const FtlGeometry& g = a.geometry();
  for (std::uint64_t lpn = 0; lpn < g.exported_slots; ++lpn) {
    ASSERT_EQ(a.Lookup(lpn), b.Lookup(lpn)) << when << ": lpn " << lpn;
  }
  const FtlCounters &ca = a.counters(), &cb = b.counters();
  EXPECT_EQ(ca.host_slots_written, cb.host_slots_written) << when;
  EXPECT_EQ(ca.nand_slots_programmed, cb.nand_slots_programmed) << when;
  EXPECT_EQ(ca.padding_slots, cb.padding_slots) << when;
  EXPECT_EQ(ca.gc_runs, cb.gc_runs) << when;
  EXPECT_EQ(ca.gc_slots_moved, cb.gc_slots_moved) << when;
  EXPECT_EQ(ca.dropped_writes, cb.dropped_writes) << when;
  EXPECT_EQ(a.mapped_slots(), b.mapped_slots()) << when;
  for (std::uint32_t die = 0; die < g.dies; ++die) {
    EXPECT_EQ(a.free_blocks(die), b.free_blocks(die)) << when << ": die " << die;
  }
  EXPECT_EQ(a.ClosedBlockValidCounts(), b.ClosedBlockValidCounts()) << when;
  std::string error;
  EXPECT_TRUE(b.CheckConsistency(&error)) << when << ": " << error;
}

// PreconditionFull against writing every unit in order, on geometries where
// program units and dies do not divide the drive evenly: the same state, and
// the same state again after random writes and trims that make GC collect
// blocks the fill left implicit.
TEST(FtlTest, PreconditionFullIsWritingEveryUnitInOrder) {
  struct Case {
    std::uint32_t dies, blocks_per_die, slots_per_block, slots_per_program;
    std::uint64_t exported;
  };
  for (const Case& c : {Case{1, 40, 16, 4, 501}, Case{3, 48, 64, 8, 7001},
                        Case{4, 32, 48, 12, 4 * 32 * 48 * 7 / 8 + 5}, Case{5, 64, 16, 16, 4091}}) {
    FtlGeometry g;
    g.dies = c.dies;
    g.blocks_per_die = c.blocks_per_die;
    g.slots_per_block = c.slots_per_block;
    g.slots_per_program = c.slots_per_program;
    g.slots_per_page = 2;
    g.exported_slots = c.exported;
    g.gc_foreground_free_blocks = 2;
    g.gc_background_free_blocks = 4;
    Ftl written(g, nullptr), built(g, nullptr);
    for (std::uint64_t lpn = 0; lpn < g.exported_slots; ++lpn) written.Write(lpn);
    built.PreconditionFull();
    ExpectSameFtl(written, built, "after the fill");
    written.FlushPending();
    built.FlushPending();
    ExpectSameFtl(written, built, "after the padding");
    Rng rng(c.exported);
    for (std::uint64_t i = 0; i < 3 * g.exported_slots; ++i) {
      const std::uint64_t lpn = rng.Below(g.exported_slots);
      if (rng.Below(40) == 0) {
        written.Trim(lpn);
        built.Trim(lpn);
      } else {
        written.Write(lpn);
        built.Write(lpn);
      }
    }
    EXPECT_GT(built.counters().gc_runs, 0u);
    ExpectSameFtl(written, built, "after random writes");
  }
}

// A filled drive that is only read keeps no mapping table: the fill costs no
// memory beyond the blocks' metadata and the P2L arrays' address space.
TEST(FtlTest, PreconditionFullStoresNoMapUntilWritten) {
  const FtlGeometry g = Geometry(0.07);
  Ftl written(g, nullptr), built(g, nullptr);
  written.ReserveFullMap();
  for (std::uint64_t lpn = 0; lpn < g.exported_slots; ++lpn) written.Write(lpn);
  built.PreconditionFull();
  const std::uint64_t map_bytes = g.exported_slots * sizeof(std::uint32_t);
  EXPECT_LE(built.MemoryBytes() + map_bytes, written.MemoryBytes());
  built.Write(7);
  EXPECT_EQ(written.Lookup(8), built.Lookup(8));
}

double Quantile(std::vector<std::uint32_t> v, double q) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[static_cast<std::size_t>(q * (v.size() - 1))];
}

double WafOfRandomWrites(Ftl& ftl, std::uint64_t writes, std::uint64_t seed) {
  const FtlCounters before = ftl.counters();
  Rng rng(seed);
  for (std::uint64_t i = 0; i < writes; ++i) ftl.Write(rng.Below(ftl.geometry().exported_slots));
  const FtlCounters& after = ftl.counters();
  return static_cast<double>(after.nand_slots_programmed - before.nand_slots_programmed) /
         static_cast<double>(after.host_slots_written - before.host_slots_written);
}

// The direct steady-state construction against the replay of every
// overwrite: same distribution of valid units per closed block, same free
// blocks, and the writes that follow see the same write amplification.
TEST(FtlTest, SteadyStateConstructionMatchesReplay) {
  for (double op : {0.07, 0.28}) {
    for (double factor : {0.5, 2.0}) {
      const FtlGeometry g = Geometry(op);
      const std::uint64_t n = g.exported_slots;
      const auto overwrites = static_cast<std::uint64_t>(factor * static_cast<double>(n));
      Ftl built(g, nullptr), replayed(g, nullptr);
      Rng build_rng(1);
      built.BuildSteadyState(overwrites, build_rng);
      Rng replay_rng(2);
      for (std::uint64_t lpn = 0; lpn < n; ++lpn) replayed.Write(lpn);
      for (std::uint64_t i = 0; i < overwrites; ++i) replayed.Write(replay_rng.Below(n));
      std::string error;
      ASSERT_TRUE(built.CheckConsistency(&error)) << error;

      const auto vb = built.ClosedBlockValidCounts(), vr = replayed.ClosedBlockValidCounts();
      std::uint32_t free_b = 0, free_r = 0;
      for (std::uint32_t die = 0; die < g.dies; ++die) {
        free_b += built.free_blocks(die);
        free_r += replayed.free_blocks(die);
      }
      const double waf_b = WafOfRandomWrites(built, n / 2, 9);
      const double waf_r = WafOfRandomWrites(replayed, n / 2, 9);
      printf(
          "[ measured ] OP %2.0f%%, %.1fx overwrites: valid/block p10 %.0f|%.0f p50 %.0f|%.0f "
          "p90 %.0f|%.0f (built|replayed, of %u); free blocks %u|%u; next WAF %.3f|%.3f\n",
          op * 100, factor, Quantile(vb, 0.1), Quantile(vr, 0.1), Quantile(vb, 0.5),
          Quantile(vr, 0.5), Quantile(vb, 0.9), Quantile(vr, 0.9), g.slots_per_block, free_b,
          free_r, waf_b, waf_r);
      for (double q : {0.1, 0.5, 0.9}) {
        EXPECT_NEAR(Quantile(vb, q), Quantile(vr, q), 0.05 * g.slots_per_block) << q;
      }
      EXPECT_NEAR(static_cast<double>(vb.size()), static_cast<double>(vr.size()), 0.01 * vr.size());
      EXPECT_NEAR(waf_b, waf_r, 0.03 * waf_r);
    }
  }
}

// Geometries for the group-minimum tests: one group of 24 blocks per die, and
// 150 blocks per die (groups of 64, 64 and 22).
FtlGeometry SmallGeometry(std::uint32_t dies, std::uint32_t blocks_per_die) {
  FtlGeometry g;
  g.dies = dies;
  g.blocks_per_die = blocks_per_die;
  g.slots_per_block = 16;
  g.slots_per_program = 4;
  g.slots_per_page = 2;
  g.exported_slots = std::uint64_t{dies} * blocks_per_die * 16 * 3 / 4;
  g.gc_foreground_free_blocks = 2;
  g.gc_background_free_blocks = 4;
  return g;
}

std::uint32_t GroupEnd(const FtlGeometry& g, std::uint32_t die, std::uint32_t group) {
  return std::min((die * g.blocks_per_die) + (group + 1) * 64, (die + 1) * g.blocks_per_die);
}

// The smallest key of any block in the group, closed or not (a group minimum
// need not equal it: see the next test).
std::uint64_t SmallestKey(const Ftl& ftl, std::uint32_t die, std::uint32_t group) {
  const FtlGeometry& g = ftl.geometry();
  std::uint64_t m = ~std::uint64_t{0};
  for (std::uint32_t b = die * g.blocks_per_die + group * 64; b < GroupEnd(g, die, group); ++b) {
    m = std::min(m, FtlTestPeer::Key(ftl, b));
  }
  return m;
}

// Greedy victim by brute force over every block of the die: the closed block
// with the smallest key (fewest valid units, then the most recent change),
// unless it is full (no gain) or its units would not fit (no free block and
// less room in the open GC block).
std::uint32_t BruteForceVictim(const Ftl& ftl, std::uint32_t die) {
  const FtlGeometry& g = ftl.geometry();
  std::uint32_t best = Ftl::kNoBlock;
  for (std::uint32_t b = die * g.blocks_per_die; b < (die + 1) * g.blocks_per_die; ++b) {
    if (!FtlTestPeer::Closed(ftl, b)) continue;
    if (best == Ftl::kNoBlock || FtlTestPeer::Key(ftl, b) < FtlTestPeer::Key(ftl, best)) best = b;
  }
  if (best == Ftl::kNoBlock) return best;
  const std::uint32_t valid = FtlTestPeer::Valid(FtlTestPeer::Key(ftl, best));
  if (valid >= g.slots_per_block) return Ftl::kNoBlock;
  if (ftl.free_blocks(die) == 0 && FtlTestPeer::GcRoom(ftl, die) < valid) return Ftl::kNoBlock;
  return best;
}

// One operation of a seeded random sequence: a write (80%), a trim (12%),
// a flush (2%), an incremental GC step of up to 23 moves (4%, the erase
// alone half the time) or a whole collection (2%) on a random die.
void RandomOperation(Ftl& ftl, Rng& rng) {
  const FtlGeometry& g = ftl.geometry();
  const std::uint64_t lpn = rng.Below(g.exported_slots);
  const std::uint64_t op = rng.Below(100);
  const auto die = static_cast<std::uint32_t>(rng.Below(g.dies));
  if (op < 80) {
    ftl.Write(lpn);
  } else if (op < 92) {
    ftl.Trim(lpn);
  } else if (op < 94) {
    ftl.FlushPending();
  } else if (op < 98) {
    ftl.CollectStep(die, static_cast<std::uint32_t>(rng.Below(24)), rng.Below(2) == 0);
  } else {
    ftl.CollectOne(die);
  }
}

// Two dies of SmallGeometry(2, 24): die 0 collects its only closed block
// while die 1 has closed none. Program units alternate between the dies: 28
// writes close die 0's first block (4 program units of 4) and leave die 1's
// open at 12 units; every unit on die 0 is then trimmed and collected.
void EraseOnDie0BeforeDie1ClosesABlock(Ftl& ftl) {
  for (std::uint64_t lpn = 0; lpn < 28; ++lpn) ftl.Write(lpn);
  for (std::uint64_t lpn = 0; lpn < 28; ++lpn) {
    if ((lpn / 4) % 2 == 0) ftl.Trim(lpn);
  }
  ftl.CollectOne(0);
}

// After an erase on a small geometry, die 1 has closed no block yet: its
// minimum is still the initial all-ones while its free blocks' keys are
// kNotClosed. A check against every block's key reports "die 1 group 0: stale
// minimum" here; the state is right (the victim search reads closed keys
// only, and a minimum with kNotClosed set means "none closed"), and the check
// against closed keys passes.
TEST(FtlTest, GroupMinimumOfAGroupWithoutClosedBlocksIsNotStale) {
  const FtlGeometry g = SmallGeometry(2, 24);
  Ftl ftl(g, nullptr);
  std::string error;
  EXPECT_TRUE(ftl.CheckConsistency(&error)) << "fresh: " << error;
  EraseOnDie0BeforeDie1ClosesABlock(ftl);
  ASSERT_EQ(ftl.counters().erases, 1u);
  for (std::uint32_t b = 0; b < 48; ++b) ASSERT_FALSE(FtlTestPeer::Closed(ftl, b)) << b;
  // Die 1's minimum is not its smallest key, and is accepted.
  EXPECT_NE(FtlTestPeer::GroupMin(ftl, 1, 0), SmallestKey(ftl, 1, 0));
  EXPECT_TRUE(ftl.CheckConsistency(&error)) << error;
  EXPECT_EQ(FtlTestPeer::FindVictim(ftl, 0), Ftl::kNoBlock);
  EXPECT_EQ(FtlTestPeer::FindVictim(ftl, 1), Ftl::kNoBlock);

  // Seeded random operations with 150 blocks per die (groups of 64, 64, 22):
  // erased blocks are reused first (the free list is a stack), so a group
  // past the blocks in use keeps its initial minimum through the erases.
  const FtlGeometry big = SmallGeometry(2, 150);
  Ftl random(big, nullptr);
  Rng rng(7);
  std::uint64_t erases = 0, erases_with_other_minimum = 0;
  for (int i = 0; i < 40000; ++i) {
    RandomOperation(random, rng);
    if (random.counters().erases == erases) continue;
    erases = random.counters().erases;
    bool differs = false;
    for (std::uint32_t die = 0; die < big.dies; ++die) {
      for (std::uint32_t grp = 0; grp < FtlTestPeer::GroupsPerDie(random); ++grp) {
        differs |= FtlTestPeer::GroupMin(random, die, grp) != SmallestKey(random, die, grp);
      }
    }
    erases_with_other_minimum += differs;
    ASSERT_TRUE(random.CheckConsistency(&error)) << "op " << i << ": " << error;
  }
  EXPECT_GT(erases, 1000u);
  EXPECT_GT(erases_with_other_minimum, 0u);
}

// The check is not vacuous: a group minimum above the smallest closed key
// (the true victim hidden), below every key (the search would scan past the
// group for a block that has it) or a closed-looking value in a group with
// no closed block is reported.
TEST(FtlTest, ConsistencyCheckRejectsWrongGroupMinima) {
  const FtlGeometry g = SmallGeometry(1, 150);
  Ftl ftl(g, nullptr);
  Rng rng(3);
  for (std::uint64_t lpn = 0; lpn < g.exported_slots; ++lpn) ftl.Write(lpn);
  for (int i = 0; i < 5000; ++i) ftl.Write(rng.Below(g.exported_slots));
  Ftl early(SmallGeometry(2, 24), nullptr);
  EraseOnDie0BeforeDie1ClosesABlock(early);
  std::string error;
  ASSERT_TRUE(ftl.CheckConsistency(&error)) << error;
  ASSERT_TRUE(early.CheckConsistency(&error)) << error;
  std::vector<std::uint64_t> closed;
  for (std::uint32_t b = 0; b < 64; ++b) {
    if (FtlTestPeer::Closed(ftl, b)) closed.push_back(FtlTestPeer::Key(ftl, b));
  }
  ASSERT_GE(closed.size(), 2u);
  std::sort(closed.begin(), closed.end());
  struct Case {
    Ftl* ftl;
    std::uint32_t die, group;
    std::uint64_t value;
    const char* what;
  };
  for (const Case& c : {Case{&ftl, 0, 0, closed[1], "the second smallest closed key"},
                        Case{&ftl, 0, 0, closed[0] - 1, "below every key"},
                        Case{&early, 1, 0, closed[0], "a closed key where none is closed"}}) {
    std::uint64_t& group_min = FtlTestPeer::GroupMin(*c.ftl, c.die, c.group);
    const std::uint64_t kept = group_min;
    group_min = c.value;
    error.clear();
    EXPECT_FALSE(c.ftl->CheckConsistency(&error)) << c.what;
    const std::string where =
        "die " + std::to_string(c.die) + " group " + std::to_string(c.group) + ": stale minimum";
    EXPECT_NE(error.find(where), std::string::npos) << c.what << ": " << error;
    group_min = kept;
    EXPECT_TRUE(c.ftl->CheckConsistency(&error)) << c.what << ", restored: " << error;
  }
}

// Checks the victim search against BruteForceVictim on every die at each
// physical operation the FTL reports (host program, GC program, erase):
// these are the points right before GC picks a victim.
class VictimChecker final : public FtlListener {
 public:
  void set_ftl(const Ftl* ftl) { ftl_ = ftl; }
  void OnHostProgram(std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t,
                     std::uint32_t) override {
    Check("host program");
  }
  void OnGcProgram(std::uint32_t, std::uint32_t) override { Check("GC program"); }
  void OnErase(std::uint32_t) override { Check("erase"); }
  void Check(const char* when) {
    for (std::uint32_t die = 0; die < ftl_->geometry().dies; ++die) {
      // The search scans a group for the block holding its minimum: only
      // run it on minima that hold one (else it would read past the group).
      if (!MinimaHold(die)) {
        if (mismatches_++ < 5) ADD_FAILURE() << "at " << when << ", die " << die << ": minima";
        continue;
      }
      const std::uint32_t found = FtlTestPeer::FindVictim(*ftl_, die);
      const std::uint32_t expected = BruteForceVictim(*ftl_, die);
      ++checks_;
      if (expected != Ftl::kNoBlock) ++checks_with_victim_;
      if (found != expected && mismatches_++ < 5) {
        ADD_FAILURE() << "at " << when << " (check " << checks_ << "), die " << die
                      << ": search finds block " << found << ", brute force " << expected;
      }
    }
  }
  std::uint64_t checks_ = 0, checks_with_victim_ = 0, mismatches_ = 0;

 private:
  // Each group minimum of `die` is the smallest closed key of its group, or
  // has the not-closed bit (63) set where no block of the group is closed.
  bool MinimaHold(std::uint32_t die) const {
    const FtlGeometry& g = ftl_->geometry();
    for (std::uint32_t grp = 0; grp < FtlTestPeer::GroupsPerDie(*ftl_); ++grp) {
      std::uint64_t closed = ~std::uint64_t{0};
      for (std::uint32_t b = die * g.blocks_per_die + grp * 64; b < GroupEnd(g, die, grp); ++b) {
        if (FtlTestPeer::Closed(*ftl_, b)) closed = std::min(closed, FtlTestPeer::Key(*ftl_, b));
      }
      const std::uint64_t m = FtlTestPeer::GroupMin(*ftl_, die, grp);
      if (closed != ~std::uint64_t{0} ? m != closed : (m >> 63) == 0) return false;
    }
    return true;
  }

  const Ftl* ftl_ = nullptr;
};

// Victim choice against a brute-force minimum over all closed blocks, after
// every operation of a seeded random sequence: writes, trims, flushes,
// incremental and whole GC steps, and at every program and erase inside them.
TEST(FtlTest, VictimIsTheBruteForceMinimumAfterEveryOperation) {
  for (const FtlGeometry& g : {SmallGeometry(2, 24), SmallGeometry(2, 150)}) {
    VictimChecker checker;
    Ftl ftl(g, &checker);
    checker.set_ftl(&ftl);
    Rng rng(11);
    std::string error;
    for (int i = 0; i < 60000; ++i) {
      RandomOperation(ftl, rng);
      checker.Check("after an operation");
      if (i % 16 == 0) {
        ASSERT_TRUE(ftl.CheckConsistency(&error)) << "op " << i << ": " << error;
      }
    }
    printf(
        "[ measured ] %u blocks per die: %llu victim searches checked (%llu with a victim), "
        "%llu erases\n",
        g.blocks_per_die, static_cast<unsigned long long>(checker.checks_),
        static_cast<unsigned long long>(checker.checks_with_victim_),
        static_cast<unsigned long long>(ftl.counters().erases));
    EXPECT_EQ(checker.mismatches_, 0u);
    EXPECT_GT(ftl.counters().erases, 2000u) << g.blocks_per_die;
    EXPECT_GT(checker.checks_with_victim_, checker.checks_ / 2) << g.blocks_per_die;
    EXPECT_TRUE(ftl.CheckConsistency(&error)) << error;
  }
}

TEST(FtlTest, LambertHelperMatchesKnownValue) {
  EXPECT_NEAR(LambertW0(-0.2), -0.25917110181907377, 1e-12);
}

}  // namespace
}  // namespace devmodel::internal

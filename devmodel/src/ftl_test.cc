#include "ftl.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "rng.h"

namespace devmodel::internal {
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
    const double waf = static_cast<double>(after.nand_slots_programmed - before.nand_slots_programmed) /
                       static_cast<double>(after.host_slots_written - before.host_slots_written);
    const double a = static_cast<double>(g.dies) * g.blocks_per_die * g.slots_per_block / static_cast<double>(n);
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

TEST(FtlTest, LambertHelperMatchesKnownValue) {
  EXPECT_NEAR(LambertW0(-0.2), -0.25917110181907377, 1e-12);
}

}  // namespace
}  // namespace devmodel::internal

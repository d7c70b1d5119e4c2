// The same request stream twice gives identical completion times and counters,
// for every shipped profile (and a preconditioned SSD).
#include <gtest/gtest.h>

#include <filesystem>

#include "devmodel/profile.h"
#include "devmodel/ssd.h"
#include "rng.h"
#include "test_util.h"

namespace devmodel {
namespace {

std::vector<TimeNs> RunMixed(Device& d, std::uint64_t seed) {
  internal::Rng rng(seed);
  const std::uint64_t blocks = std::min<std::uint64_t>(d.capacity_bytes() / 4096, 1u << 20);
  const auto done = testing::RunClosedLoop(d, 16, 3000, [&](TimeNs) {
    Request r;
    const std::uint64_t pick = rng.Below(100);
    r.op = pick < 60 ? Op::kRead : pick < 95 ? Op::kWrite : pick < 98 ? Op::kTrim : Op::kFlush;
    if (r.op != Op::kFlush) {
      r.offset_bytes = rng.Below(blocks) * 4096;
      r.length_bytes = 4096 * (1 + rng.Below(8));
      if (r.offset_bytes + r.length_bytes > d.capacity_bytes()) r.offset_bytes = 0;
    }
    return r;
  });
  std::vector<TimeNs> times;
  for (const auto& f : done) {
    times.push_back(f.submitted_ns);
    times.push_back(f.completed_ns);
  }
  return times;
}

TEST(DeterminismTest, SameStreamSameCompletionsForEveryProfile) {
  for (const auto& entry : std::filesystem::directory_iterator(DEVMODEL_PROFILE_DIR)) {
    if (entry.path().extension() != ".toml") continue;
    std::string error;
    auto a = LoadProfile(entry.path().string(), 99, &error);
    auto b = LoadProfile(entry.path().string(), 99, &error);
    ASSERT_NE(a, nullptr) << error;
    EXPECT_EQ(RunMixed(*a, 5), RunMixed(*b, 5)) << entry.path();
    EXPECT_EQ(a->CountersJson(), b->CountersJson()) << entry.path();
  }
}

TEST(DeterminismTest, PreconditionedSsdIsReproducibleAndSeedMatters) {
  SsdConfig c;
  c.precondition = Precondition::kSteady;
  c.blocks_per_plane = 64;  // 2 GiB raw: keeps preconditioning fast
  std::string error;
  auto a = NewSsd(c, 1, &error), b = NewSsd(c, 1, &error), other = NewSsd(c, 2, &error);
  const auto ta = RunMixed(*a, 8);
  EXPECT_EQ(ta, RunMixed(*b, 8));
  EXPECT_EQ(a->CountersJson(), b->CountersJson());
  EXPECT_NE(ta, RunMixed(*other, 8));  // different preconditioning layout
}

}  // namespace
}  // namespace devmodel

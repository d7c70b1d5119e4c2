#include "ring.h"

#include <gtest/gtest.h>

#include <deque>

#include "rng.h"

namespace devmodel::internal {
namespace {

TEST(RingTest, BehavesLikeADequeUsedAsAQueue) {
  Ring<int> ring;
  std::deque<int> ref;
  Rng rng(4);
  for (int i = 0; i < 20000; ++i) {
    if (ref.empty() || rng.Below(100) < 55) {
      ring.push_back(i);
      ref.push_back(i);
    } else {
      ASSERT_EQ(ring.front(), ref.front());
      ring.pop_front();
      ref.pop_front();
    }
    ASSERT_EQ(ring.size(), ref.size());
    if (!ref.empty()) {
      ASSERT_EQ(ring[ref.size() - 1], ref.back());
    }
  }
  EXPECT_GE(ring.capacity(), ring.size());
}

}  // namespace
}  // namespace devmodel::internal

#include "io_uring_engine.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace blkgen {
namespace {

// Requests 0..n-1 with seq[i] = the order request i was queued in.
struct Batch {
  std::vector<IoRequest> requests;
  std::vector<uint64_t> seq;
  explicit Batch(std::vector<uint64_t> order) : requests(order.size()), seq(std::move(order)) {
    for (size_t i = 0; i < requests.size(); ++i) requests[i].index = static_cast<uint32_t>(i);
  }
  // The requests in `ring` order (indexes), as pointers.
  std::vector<IoRequest*> Posted(const std::vector<uint32_t>& ring) {
    std::vector<IoRequest*> out;
    for (uint32_t i : ring) out.push_back(&requests[i]);
    return out;
  }
  static std::vector<uint64_t> SeqOf(const std::vector<IoRequest*>& v,
                                     const std::vector<uint64_t>& seq) {
    std::vector<uint64_t> out;
    for (const IoRequest* r : v) out.push_back(seq[r->index]);
    return out;
  }
};

TEST(IoUringOrderTest, ReversedBatchIsReversed) {
  Batch b({10, 11, 12, 13, 14});
  std::vector<IoRequest*> posted = b.Posted({4, 3, 2, 1, 0});  // 6.1: newest first
  PutInSubmissionOrder(posted, b.seq);
  EXPECT_EQ(Batch::SeqOf(posted, b.seq), (std::vector<uint64_t>{10, 11, 12, 13, 14}));
}

TEST(IoUringOrderTest, OrderedBatchStaysAndMixedIsSorted) {
  Batch b({7, 3, 9, 1, 5});
  std::vector<IoRequest*> ordered = b.Posted({3, 1, 4, 0, 2});
  PutInSubmissionOrder(ordered, b.seq);
  EXPECT_EQ(Batch::SeqOf(ordered, b.seq), (std::vector<uint64_t>{1, 3, 5, 7, 9}));
  std::vector<IoRequest*> mixed = b.Posted({0, 3, 2, 4, 1});
  PutInSubmissionOrder(mixed, b.seq);
  EXPECT_EQ(Batch::SeqOf(mixed, b.seq), (std::vector<uint64_t>{1, 3, 5, 7, 9}));
  std::vector<IoRequest*> one = b.Posted({2});
  PutInSubmissionOrder(one, b.seq);
  EXPECT_EQ(one[0], &b.requests[2]);
}

// The engine on a temporary file: every queued read comes back once, with
// whichever setup flags the kernel takes, whether Reap() waits or polls.
TEST(IoUringEngineTest, EveryReadComesBackOnceWaitingOrPolling) {
  char path[] = "/tmp/blkgen-io-uring-test.XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  unlink(path);
  constexpr uint32_t kDepth = 16;
  constexpr uint32_t kBs = 4096;
  ASSERT_EQ(ftruncate(fd, kDepth * kBs), 0);
  std::vector<uint8_t> buffers(kDepth * kBs);
  std::vector<IoRequest> requests(kDepth);
  for (uint32_t i = 0; i < kDepth; ++i) {
    requests[i].index = i;
    requests[i].buffer = buffers.data() + i * kBs;
    requests[i].length = kBs;
    requests[i].offset = static_cast<uint64_t>((i * 7) % kDepth) * kBs;
    requests[i].op = IoOp::kRead;
  }
  IoUringEngine engine;
  EngineSetup setup;
  setup.fd = fd;
  setup.depth = kDepth;
  setup.requests = requests;
  setup.buffer_bytes = kBs;
  ASSERT_TRUE(engine.Init(setup).ok());
  for (uint32_t min : {kDepth, 1u, 0u}) {
    SCOPED_TRACE("min " + std::to_string(min));
    for (IoRequest& r : requests) {
      r.result = -1;
      ASSERT_EQ(engine.Queue(&r), SubmitResult::kQueued);
    }
    ASSERT_EQ(engine.Commit(), static_cast<int>(kDepth));
    std::vector<IoRequest*> got;
    IoRequest* out[kDepth];
    for (int spins = 0; got.size() < kDepth && spins < 1000000; ++spins) {
      const uint32_t left = kDepth - static_cast<uint32_t>(got.size());
      const uint32_t want = std::min(min, left);
      const uint32_t max = std::max(want, 3u);
      const int k = engine.Reap(want, max, out);
      ASSERT_GE(k, static_cast<int>(want));
      ASSERT_LE(k, static_cast<int>(max));
      got.insert(got.end(), out, out + k);
    }
    ASSERT_EQ(got.size(), kDepth);
    std::sort(got.begin(), got.end());
    EXPECT_EQ(std::unique(got.begin(), got.end()), got.end());
    for (const IoRequest& r : requests) EXPECT_EQ(r.result, kBs);
  }
  close(fd);
}

}  // namespace
}  // namespace blkgen

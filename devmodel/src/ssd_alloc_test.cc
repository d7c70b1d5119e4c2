// The per-request path does not allocate once warm: a queue of reads
// through the SSD's stages (each read tracked per tag until polled final,
// in the model, the fault wrapper and the C API) reuses what earlier reads
// freed. Its own test binary, because it replaces the global operator new
// to count allocations.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <new>
#include <queue>
#include <vector>

#include "devmodel/devmodel.h"
#include "rng.h"
#include "ssd_test_util.h"

namespace {
std::size_t g_allocations = 0;
}  // namespace

void* operator new(std::size_t bytes) {
  ++g_allocations;
  if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace devmodel {
namespace {

using testing::MakeSsd;
using testing::Rq;
using testing::SmallSsdConfig;

// Random 4 KiB reads at QD32, each polled at the deadline it was given (as
// QEMU's glue does) and resubmitted with a new tag when final; returns the
// allocations `reads` of them made.
std::size_t AllocationsOverReads(Device& ssd, internal::Rng& rng, TimeNs* now,
                                 std::uint64_t* tag, int reads) {
  struct Due {
    TimeNs at;
    std::uint64_t tag;
    bool operator>(const Due& o) const { return at != o.at ? at > o.at : tag > o.tag; }
  };
  std::vector<Due> storage;
  storage.reserve(64);
  std::priority_queue<Due, std::vector<Due>, std::greater<>> due(std::greater<>{},
                                                                 std::move(storage));
  const std::size_t before = g_allocations;
  int submitted = 0;
  auto submit = [&] {
    Request r = Rq(Op::kRead, rng.Below(16384) * 4096, 4096);
    r.tag = ++*tag;
    ++submitted;
    const Completion c = ssd.Submit(r, *now);
    due.push({c.deadline_ns, r.tag});  // final: its poll is of a tag already done
  };
  while (submitted < 32) submit();
  while (!due.empty()) {
    const Due d = due.top();
    due.pop();
    *now = d.at;
    const Completion c = ssd.Poll(d.tag, *now);
    if (!c.final) {
      due.push({c.deadline_ns, d.tag});
    } else if (submitted < reads) {
      submit();
    }
  }
  return g_allocations - before;
}

TEST(SsdAllocTest, LinkedReadsDoNotAllocateOnceWarm) {
  SsdConfig c = SmallSsdConfig();
  ASSERT_NE(c.host_link_mb_s, 0u);
  auto ssd = MakeSsd(c);
  for (std::uint64_t offset = 0; offset < (64u << 20); offset += 1 << 20) {
    ssd->Submit(Rq(Op::kWrite, offset, 1 << 20), 0);
  }
  ssd->Submit(Rq(Op::kFlush, 0, 0), 0);
  internal::Rng rng(5);
  TimeNs now = 1000000000;
  std::uint64_t tag = 0;
  AllocationsOverReads(*ssd, rng, &now, &tag, 4096);  // warm: tables reach their size
  EXPECT_EQ(AllocationsOverReads(*ssd, rng, &now, &tag, 4096), 0u);
}

// As AllocationsOverReads, through the C ABI QEMU's glue calls.
std::size_t CApiAllocationsOverReads(devmodel_t* m, internal::Rng& rng, std::uint64_t* now,
                                     std::uint64_t* tag, int reads) {
  struct Due {
    std::uint64_t at, tag;
    bool operator>(const Due& o) const { return at != o.at ? at > o.at : tag > o.tag; }
  };
  std::vector<Due> storage;
  storage.reserve(64);
  std::priority_queue<Due, std::vector<Due>, std::greater<>> due(std::greater<>{},
                                                                 std::move(storage));
  char* err = nullptr;
  const std::size_t before = g_allocations;
  int submitted = 0;
  auto submit = [&] {
    const devmodel_request r = {DEVMODEL_OP_READ, 1, rng.Below(16384) * 4096, 4096, ++*tag};
    devmodel_result c;
    devmodel_submit_result(m, &r, *now, &c, &err);
    ++submitted;
    due.push({c.deadline_ns, r.tag});
  };
  while (submitted < 32) submit();
  while (!due.empty()) {
    const Due d = due.top();
    due.pop();
    *now = d.at;
    devmodel_result c;
    devmodel_poll_result(m, d.tag, *now, &c, &err);
    if (!c.final) {
      due.push({c.deadline_ns, d.tag});
    } else if (submitted < reads) {
      submit();
    }
  }
  EXPECT_EQ(err, nullptr);
  return g_allocations - before;
}

TEST(SsdAllocTest, CApiReadsDoNotAllocateOnceWarm) {
  char* err = nullptr;
  devmodel_t* m = devmodel_open(DEVMODEL_PROFILE_DIR "/samsung-970evoplus-1t.toml", 7, &err);
  ASSERT_NE(m, nullptr) << err;
  std::uint64_t now = 0, tag = 0;
  for (std::uint64_t offset = 0; offset < (64u << 20); offset += 1 << 20) {
    const devmodel_request w = {DEVMODEL_OP_WRITE, 1, offset, 1 << 20, ++tag};
    devmodel_result c;
    devmodel_submit_result(m, &w, now, &c, &err);
    ASSERT_EQ(c.final, 1);
  }
  now = 1000000000;
  internal::Rng rng(5);
  CApiAllocationsOverReads(m, rng, &now, &tag, 4096);  // warm
  EXPECT_EQ(CApiAllocationsOverReads(m, rng, &now, &tag, 4096), 0u);
  devmodel_close(m);
}

}  // namespace
}  // namespace devmodel

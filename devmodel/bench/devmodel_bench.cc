// Cost per request of each model in steady state, model memory for the sparse
// case (4 TiB SSD, 8 GiB written sequentially or scattered) and the time to
// precondition a 64 GiB drive. Run through scripts/bench.sh, which prints
// medians over repetitions. Not a test: numbers depend on the host (the SSD
// at 1 TiB is bound by DRAM latency: one random L2P read per request).
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <queue>
#include <vector>

#include "devmodel/cloud.h"
#include "devmodel/hdd.h"
#include "devmodel/ssd.h"
#include "devmodel/zero.h"
#include "item_pool.h"
#include "rng.h"
#include "test_util.h"

namespace devmodel {
namespace {

// 1 TiB exported, 8 channels x 8 dies, 16 KiB pages, 2 planes, 6.9% spare.
SsdConfig TebibyteSsd() {
  SsdConfig c;
  c.channels = 8;
  c.dies_per_channel = 8;
  c.planes_per_die = 2;
  c.pages_per_block = 768;
  c.page_bytes = 16384;
  c.blocks_per_plane = 730;  // 64 x 730 x 24 MiB = 1.07 TiB raw
  c.capacity_bytes = 1ull << 40;
  c.write_buffer_bytes = 64ull << 20;
  c.page_read_ns = 45000;
  c.page_program_ns = 500000;
  c.channel_mb_s = 1400;
  c.host_link_mb_s = 3500;
  c.precondition = Precondition::kSteady;
  c.precondition_overwrite_factor = 0.5;
  return c;
}

Device& SteadySsd() {
  static std::unique_ptr<Device> ssd = [] {
    const auto t0 = std::chrono::steady_clock::now();
    std::string error;
    auto d = NewSsd(TebibyteSsd(), 1, &error);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr,
                 "preconditioned 1 TiB SSD (full + 0.5x random overwrite, built directly) in "
                 "%.1f s, %.0f MiB\n",
                 s, d->MemoryBytes() / 1048576.0);
    return d;
  }();
  return *ssd;
}

// Mixed 70% read / 30% write 4 KiB random stream, one request every
// `step_ns`, each with its own tag. As QEMU's glue does, a request whose
// deadline is not final (the SSD's host link, the HDD's "poll again at") is
// polled at that deadline, before any later submission: so the cost per
// request includes its polls. One stream per benchmark, kept across runs.
class MixedStream {
 public:
  MixedStream(TimeNs step_ns, std::uint64_t seed) : step_ns_(step_ns), rng_(seed) {}

  void Run(benchmark::State& state, Device& device) {
    const std::uint64_t blocks = device.capacity_bytes() / 4096;
    Request r;
    r.length_bytes = 4096;
    for (auto _ : state) {
      now_ += step_ns_;
      while (!polls_.empty() && polls_.top().at <= now_) {
        const Due d = polls_.top();
        polls_.pop();
        const Completion c = device.Poll(d.tag, d.at);
        if (!c.final) polls_.push({c.deadline_ns, d.tag});
      }
      r.op = rng_.Below(10) < 7 ? Op::kRead : Op::kWrite;
      r.offset_bytes = rng_.Below(blocks) * 4096;
      r.tag = ++tag_;
      const Completion c = device.Submit(r, now_);
      if (!c.final) polls_.push({c.deadline_ns, r.tag});
    }
    state.SetItemsProcessed(state.iterations());
  }

 private:
  struct Due {
    TimeNs at;
    std::uint64_t tag;
    bool operator>(const Due& o) const { return at > o.at; }
  };
  TimeNs step_ns_;
  internal::Rng rng_;
  TimeNs now_ = 0;
  std::uint64_t tag_ = 0;
  std::priority_queue<Due, std::vector<Due>, std::greater<>> polls_;
};

void BM_Ssd1TiBSteadyMixed(benchmark::State& state) {
  static MixedStream stream(100000, 2);  // 10K IOPS: sustainable with GC
  stream.Run(state, SteadySsd());
}
BENCHMARK(BM_Ssd1TiBSteadyMixed);

// The floor under BM_Ssd1TiBSteadyMixed on this host: one uniformly random
// 4-byte load per iteration from a 1 GiB table in 2 MiB huge-page chunks,
// as the 1 TiB drive's L2P is held (SparseMap regions in ItemPool chunks).
// Every SSD read does one such load; every write does more (the old
// mapping, its block's P2L slot, GC's moves). dependent:0 lets the CPU
// overlap the loads of successive iterations; dependent:1 makes each
// address depend on the load before it, as in the model, where a request's
// completion time (die and channel timelines) depends on its mapping.
void BM_RandomLoad1GiBFloor(benchmark::State& state) {
  constexpr std::size_t kChunk = internal::ItemPool::kChunkAlign;
  constexpr std::size_t kPerChunk = kChunk / sizeof(std::uint32_t);
  constexpr std::size_t kChunks = (std::size_t{1} << 30) / kChunk;
  static internal::ItemPool pool(kChunk);
  static std::vector<std::uint32_t*> table = [] {
    std::vector<std::uint32_t*> t;
    for (std::size_t i = 0; i < kChunks; ++i) {
      auto* chunk = static_cast<std::uint32_t*>(pool.Allocate());
      for (std::size_t j = 0; j < kPerChunk; ++j) chunk[j] = static_cast<std::uint32_t>(j);
      t.push_back(chunk);
    }
    return t;
  }();
  internal::Rng rng(6);
  std::uint32_t sum = 0;
  if (state.range(0) == 1) {
    for (auto _ : state) {
      // (sum & 1) flips the lowest index bit: the address is known only
      // once the load before has arrived
      const std::uint64_t i = rng.Below(kChunks * kPerChunk) ^ (sum & 1);
      sum += table[i / kPerChunk][i % kPerChunk];
    }
  } else {
    for (auto _ : state) {
      const std::uint64_t i = rng.Below(kChunks * kPerChunk);
      sum += table[i / kPerChunk][i % kPerChunk];
    }
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RandomLoad1GiBFloor)->ArgName("dependent")->Arg(0)->Arg(1);

void BM_HddFifoRandom(benchmark::State& state) {
  static std::unique_ptr<Device> hdd = [] {
    HddConfig c;
    c.zone_mb_s = {210, 200, 190, 180, 170, 160, 150, 140, 130, 120, 110, 100};
    std::string e;
    return NewHdd(c, &e);
  }();
  static MixedStream stream(13000000, 3);  // ~QD1 pace
  stream.Run(state, *hdd);
}
BENCHMARK(BM_HddFifoRandom);

void BM_CloudGp3OverZero(benchmark::State& state) {
  static std::unique_ptr<Device> cloud = [] {
    ZeroConfig z;
    z.capacity_bytes = 100ull << 30;
    CloudConfig c;
    std::string e;
    return NewCloudVolume(c, NewZero(z, &e), 4, &e);
  }();
  static MixedStream stream(333333, 4);
  stream.Run(state, *cloud);
}
BENCHMARK(BM_CloudGp3OverZero);

// malloc's view: small chunks + chunks it mmapped. The FTL's huge-page pools
// are mapped directly and show up in rss_MiB (resident growth) instead.
std::size_t HeapBytes() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

// Memory of the sparse case: a 4 TiB SSD with 8 GiB written, as 1 MiB
// sequential writes (range(0) == 0) or 4 KiB writes at uniformly random
// offsets (range(0) == 1, the worst case for the mapping).
void BM_SparseMemory4TiB(benchmark::State& state) {
  const bool scattered = state.range(0) == 1;
  for (auto _ : state) {
    malloc_trim(0);  // freed memory goes back to the kernel: RSS growth is this iteration's
    const std::size_t heap_before = HeapBytes();
    const std::uint64_t rss_before = testing::ResidentBytes();
    SsdConfig c;
    c.channels = 8;
    c.dies_per_channel = 8;
    c.planes_per_die = 4;
    c.blocks_per_plane = 1400;
    c.pages_per_block = 768;
    c.capacity_bytes = 4ull << 40;
    std::string e;
    auto ssd = NewSsd(c, 1, &e);
    Request r;
    r.op = Op::kWrite;
    r.length_bytes = scattered ? 4096 : 1 << 20;
    internal::Rng rng(5);
    TimeNs now = 0;
    for (std::uint64_t written = 0; written < (8ull << 30); written += r.length_bytes) {
      if (scattered) {
        r.offset_bytes = rng.Below(c.capacity_bytes / 4096) * 4096;
        now += 2000;  // 500K IOPS offered
        ssd->Submit(r, now);
      } else {
        r.offset_bytes = written;
        now = ssd->Submit(r, now).deadline_ns;
      }
    }
    state.counters["model_MiB"] = ssd->MemoryBytes() / 1048576.0;
    state.counters["heap_MiB"] = (static_cast<double>(HeapBytes()) - heap_before) / 1048576.0;
    state.counters["rss_MiB"] =
        (static_cast<double>(testing::ResidentBytes()) - rss_before) / 1048576.0;
  }
}
BENCHMARK(BM_SparseMemory4TiB)
    ->ArgName("scattered")
    ->Arg(0)
    ->Arg(1)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// Preconditioning time for a 64 GiB drive (issue: at most a few seconds):
// kSteady (built directly, range(0) == 0) or kSteadySimulated (every
// overwrite replayed, range(0) == 1).
void BM_Precondition64GiB(benchmark::State& state) {
  for (auto _ : state) {
    SsdConfig c;
    c.channels = 8;
    c.dies_per_channel = 2;
    c.planes_per_die = 2;
    c.pages_per_block = 256;
    c.blocks_per_plane = 576;  // 16 x 576 x 8 MiB = 72 GiB raw
    c.capacity_bytes = 64ull << 30;
    c.precondition = state.range(0) == 0 ? Precondition::kSteady : Precondition::kSteadySimulated;
    std::string e;
    auto ssd = NewSsd(c, 1, &e);
    benchmark::DoNotOptimize(ssd.get());
  }
}
BENCHMARK(BM_Precondition64GiB)
    ->ArgName("simulated")
    ->Arg(0)
    ->Arg(1)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace devmodel

BENCHMARK_MAIN();

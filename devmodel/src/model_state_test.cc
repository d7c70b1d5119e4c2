// Saved model states (model_state.h, devmodel_save_state/devmodel_open_state).
// The expectation comes from the model itself: a model that runs requests A,
// is saved at T and loaded at T0, then runs requests B at T0 + offsets gives
// B the deadlines (less T0) and ends with the counters (all but
// memory_bytes, the process's heap) that one model running A and then B at
// T + the same offsets gives (less T), to the ns and byte. A fresh model
// running B gives other deadlines: the comparison sees the state.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <queue>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "checksum.h"
#include "devmodel/devmodel.h"

namespace {

std::string Profile(const char* name) { return std::string(DEVMODEL_PROFILE_DIR) + "/" + name; }

std::string TempPath(const std::string& name) {
  return (std::filesystem::path(testing::TempDir()) / name).string();
}

std::string WriteProfile(const std::string& name, const std::string& text) {
  const std::string path = TempPath(name);
  std::ofstream(path) << text;
  return path;
}

// A small SSD with every mechanism that keeps state across requests on:
// round-robin pipelines, suspends with a limit and a resume cost, plane
// reads, an SLC cache folded when idle, page types, read retry, GC that
// yields and preemptible background GC; steady, so GC runs from the start.
const char kSmallSsd[] = R"([device]
model = "ssd"
[ssd]
channels = 2
dies_per_channel = 2
planes_per_die = 2
page_bytes = 16384
pages_per_block = 64
blocks_per_plane = 64
mapping_unit_bytes = 4096
page_read_us = 45.0
page_program_us = 500.0
block_erase_ms = 3.5
channel_mb_s = 800
host_link_mb_s = 3500
arbitration = "round_robin"
max_inflight_reads = 32
max_inflight_writes = 32
max_inflight_per_queue = 16
write_buffer_bytes = 1048576
gc_idle_delay_ms = 1.0
suspend = true
max_suspends_per_op = 2
resume_latency_us = 5.0
independent_plane_reads = true
slc_static_bytes = 8388608
slc_program_us = 90.0
slc_fold_idle_ms = 0.5
page_read_lower_us = 40.0
page_read_upper_us = 55.0
read_retry_probability = 0.05
read_retry_us = 45.0
read_retry_max_rounds = 3
gc_yield = true
gc_background_preemptible = true
precondition = "steady"
precondition_overwrite_factor = 1.0
)";

// The same drive filled in order ("full": implicit mapping tables), FIFO
// admission, write-through, no SLC cache.
const char kSmallSsdFull[] = R"([device]
model = "ssd"
[ssd]
channels = 2
dies_per_channel = 2
planes_per_die = 2
page_bytes = 16384
pages_per_block = 64
blocks_per_plane = 64
mapping_unit_bytes = 4096
host_link_mb_s = 0
write_buffer_bytes = 0
precondition = "full"
)";

struct Req {
  uint32_t op;
  uint64_t offset, length;
  uint32_t queue;
  uint64_t at;  // ns after the run's base time
};

// Runs `reqs` (in time order) from `base`: each submitted at base + at, a
// completion that is not final polled at its time, events in time order.
// Returns each request's final deadline less base.
std::vector<uint64_t> RunReqs(devmodel_t* m, const std::vector<Req>& reqs, uint64_t base,
                          uint64_t first_tag) {
  using Ev = std::tuple<uint64_t, int, size_t>;  // time, 0 poll / 1 submit, index
  std::priority_queue<Ev, std::vector<Ev>, std::greater<>> events;
  for (size_t i = 0; i < reqs.size(); ++i) events.emplace(base + reqs[i].at, 1, i);
  std::vector<uint64_t> done(reqs.size(), 0);
  char* err = nullptr;
  while (!events.empty()) {
    const auto [t, kind, i] = events.top();
    events.pop();
    devmodel_result r;
    if (kind == 1) {
      const devmodel_request q = {reqs[i].op, reqs[i].queue, reqs[i].offset, reqs[i].length,
                                  first_tag + i};
      devmodel_submit_result(m, &q, t, &r, &err);
    } else {
      devmodel_poll_result(m, first_tag + i, t, &r, &err);
    }
    EXPECT_EQ(err, nullptr) << err;
    if (r.final) {
      done[i] = r.deadline_ns - base;
    } else {
      events.emplace(r.deadline_ns, 0, i);
    }
  }
  return done;
}

// Random 4 KiB reads and writes (`read_pct` % reads) every `gap_ns` on
// average over the first `span` bytes, with a flush and a trim among them.
std::vector<Req> Mixed(uint64_t seed, size_t n, uint64_t span, uint32_t read_pct,
                       uint64_t gap_ns) {
  std::mt19937_64 g(seed);  // its output is fixed by the standard
  std::vector<Req> out;
  uint64_t t = 0;
  for (size_t i = 0; i < n; ++i) {
    t += g() % (2 * gap_ns);
    const uint64_t offset = g() % (span / 4096) * 4096;
    uint32_t op = g() % 100 < read_pct ? DEVMODEL_OP_READ : DEVMODEL_OP_WRITE;
    uint64_t length = 4096 * (1 + g() % 4);
    if (i % 97 == 50) op = DEVMODEL_OP_FLUSH, length = 0;
    if (i % 89 == 40) op = DEVMODEL_OP_TRIM, length = 65536;
    out.push_back({op, op == DEVMODEL_OP_FLUSH ? 0 : offset, length,
                   static_cast<uint32_t>(1 + i % 3), t});
  }
  return out;
}

nlohmann::json Counters(devmodel_t* m) {
  char* err = nullptr;
  char* s = devmodel_counters_json(m, &err);
  nlohmann::json j = nlohmann::json::parse(s);
  devmodel_free(s);
  return j;
}

// The counters without memory_bytes (at every level: a cloud's backing too).
nlohmann::json DriveCounters(devmodel_t* m) {
  nlohmann::json j = Counters(m);
  for (nlohmann::json* level = &j; level != nullptr;
       level = level->contains("backing") ? &(*level)["backing"] : nullptr) {
    level->erase("memory_bytes");
  }
  return j;
}

uint64_t Latest(const std::vector<uint64_t>& v) {
  uint64_t latest = 0;
  for (uint64_t d : v) latest = std::max(latest, d);
  return latest;
}


// The check of the file's header comment. `idle_ns`: from A's last
// completion to the save instant T. Returns the saving model's counters.
nlohmann::json ExpectSaveLoadExact(const std::string& profile, uint64_t seed,
                                   const std::vector<Req>& a, const std::vector<Req>& b,
                                   uint64_t idle_ns, uint64_t t0, const std::string& file) {
  char* err = nullptr;
  devmodel_t* whole = devmodel_open(profile.c_str(), seed, &err);
  EXPECT_NE(whole, nullptr) << err;
  const uint64_t t = Latest(RunReqs(whole, a, 0, 1)) + idle_ns;
  const std::vector<uint64_t> expected = RunReqs(whole, b, t, 1000000);

  devmodel_t* saving = devmodel_open(profile.c_str(), seed, &err);
  RunReqs(saving, a, 0, 1);
  EXPECT_EQ(devmodel_save_state(saving, t, file.c_str(), &err), 1) << err;
  const nlohmann::json at_save = Counters(saving);
  devmodel_close(saving);

  devmodel_t* loaded = devmodel_open_state(profile.c_str(), file.c_str(), t0, &err);
  EXPECT_NE(loaded, nullptr) << err;
  if (loaded == nullptr) return at_save;
  EXPECT_EQ(RunReqs(loaded, b, t0, 1000000), expected);
  EXPECT_EQ(DriveCounters(loaded).dump(), DriveCounters(whole).dump());

  devmodel_t* fresh = devmodel_open(profile.c_str(), seed, &err);
  EXPECT_NE(RunReqs(fresh, b, t0, 1000000), expected) << "B does not depend on A: no test";
  devmodel_close(fresh);
  devmodel_close(loaded);
  devmodel_close(whole);
  return at_save;
}

TEST(ModelStateTest, SsdWithSlcCacheAndGcActiveContinuesExactly) {
  const std::string profile = WriteProfile("small-ssd.toml", kSmallSsd);
  const uint64_t span = 400ull << 20;
  const std::vector<Req> a = Mixed(1, 3000, span, 30, 20000);
  std::vector<Req> b = Mixed(2, 1500, span, 60, 20000);
  for (size_t i = 750; i < b.size(); ++i) b[i].at += 3000000;  // idle: GC and folds run
  const nlohmann::json at_save =
      ExpectSaveLoadExact(profile, 5, a, b, 200000, 1000000, TempPath("ssd.state"));
  // What the test claims to cover was there at the save.
  EXPECT_GT(at_save["gc_runs"], 0);
  EXPECT_GT(at_save["slc_bytes_in_use"], 0);  // a folding backlog
  EXPECT_GT(at_save["suspends"], 0);
  EXPECT_GT(at_save["reads_retried"], 0);
  // Loaded far later than saved: the same.
  ExpectSaveLoadExact(profile, 5, a, b, 200000, 50000000000ull, TempPath("ssd-late.state"));
  // A lighter A whose dies are idle at the save, B's first request before
  // the fold's idle time (0.5 ms from A's last completion) is up: folds and
  // GC wait for the saved idle point.
  const std::vector<Req> light = Mixed(12, 600, span, 90, 150000);
  std::vector<Req> late = b;
  for (Req& r : late) r.at += 300000;
  const nlohmann::json light_save =
      ExpectSaveLoadExact(profile, 5, light, late, 100000, 7, TempPath("ssd-light.state"));
  EXPECT_GT(light_save["slc_bytes_in_use"], 0);
}

TEST(ModelStateTest, SsdFilledInOrderContinuesExactly) {
  const std::string profile = WriteProfile("small-ssd-full.toml", kSmallSsdFull);
  const std::vector<Req> a = Mixed(3, 1500, 400ull << 20, 50, 50000);
  const std::vector<Req> b = Mixed(4, 800, 400ull << 20, 50, 50000);
  const nlohmann::json at_save =
      ExpectSaveLoadExact(profile, 9, a, b, 0, 123456, TempPath("ssd-full.state"));
  EXPECT_GT(at_save["gc_runs"], 0);
}

TEST(ModelStateTest, HddWithHeadAwayFromZeroContinuesExactly) {
  const std::string profile = Profile("hdd-7200-desktop-1t.toml");
  const uint64_t span = 900ull << 30;
  std::vector<Req> a = Mixed(5, 300, span, 60, 2000000);
  a.push_back({DEVMODEL_OP_READ, 800ull << 30, 4096, 1, a.back().at + 30000000});
  const std::vector<Req> b = Mixed(6, 300, span, 60, 2000000);
  const nlohmann::json at_save =
      ExpectSaveLoadExact(profile, 3, a, b, 0, 777, TempPath("hdd.state"));
  EXPECT_GT(at_save["seeks"], 0);
  EXPECT_GT(at_save["write_cache_absorbed"], 0);
  // Saved mid-revolution, loaded at another phase of the caller's clock.
  ExpectSaveLoadExact(profile, 3, a, b, 1234567, 3000000001ull, TempPath("hdd-late.state"));
}

TEST(ModelStateTest, CloudVolumeWithCreditsPartlySpentContinuesExactly) {
  const std::string profile = Profile("aws-gp2-100g.toml");
  const std::vector<Req> a = Mixed(7, 4000, 100ull << 30, 70, 300000);
  const std::vector<Req> b = Mixed(8, 2000, 100ull << 30, 70, 300000);
  const nlohmann::json at_save =
      ExpectSaveLoadExact(profile, 11, a, b, 5000000, 1, TempPath("cloud.state"));
  EXPECT_LT(at_save["credits_left"].get<double>(), 5400000.0);
  EXPECT_GT(at_save["credits_left"].get<double>(), 0.0);
}

TEST(ModelStateTest, ZeroLatencyKeepsItsCounters) {
  const std::string profile = Profile("fixed-10us.toml");
  const std::vector<Req> a = Mixed(9, 100, 1ull << 30, 50, 1000);
  const std::vector<Req> b = Mixed(10, 100, 1ull << 30, 50, 1000);
  char* err = nullptr;
  devmodel_t* whole = devmodel_open(profile.c_str(), 1, &err);
  const uint64_t t = Latest(RunReqs(whole, a, 0, 1));
  const std::vector<uint64_t> expected = RunReqs(whole, b, t, 1000000);
  devmodel_t* saving = devmodel_open(profile.c_str(), 1, &err);
  RunReqs(saving, a, 0, 1);
  const std::string file = TempPath("zero.state");
  ASSERT_EQ(devmodel_save_state(saving, t, file.c_str(), &err), 1) << err;
  devmodel_t* loaded = devmodel_open_state(profile.c_str(), file.c_str(), 42, &err);
  ASSERT_NE(loaded, nullptr) << err;
  EXPECT_EQ(RunReqs(loaded, b, 42, 1000000), expected);
  EXPECT_EQ(DriveCounters(loaded).dump(), DriveCounters(whole).dump());
  for (devmodel_t* m : {whole, saving, loaded}) devmodel_close(m);
}

// --- refusals ---

// A saved state of the small SSD (A run, nothing held) at `path`.
void SaveSmallSsd(const std::string& profile, const std::string& path) {
  char* err = nullptr;
  devmodel_t* m = devmodel_open(profile.c_str(), 5, &err);
  const uint64_t t = Latest(RunReqs(m, Mixed(1, 200, 100ull << 20, 50, 20000), 0, 1));
  ASSERT_EQ(devmodel_save_state(m, t, path.c_str(), &err), 1) << err;
  devmodel_close(m);
}

std::string OpenError(const std::string& profile, const std::string& state) {
  char* err = nullptr;
  devmodel_t* m = devmodel_open_state(profile.c_str(), state.c_str(), 0, &err);
  EXPECT_EQ(m, nullptr);
  devmodel_close(m);
  const std::string message = err != nullptr ? err : "";
  devmodel_free(err);
  return message;
}

TEST(ModelStateTest, StateOfAnotherProfileIsRefused) {
  const std::string profile = WriteProfile("refuse-ssd.toml", kSmallSsd);
  const std::string state = TempPath("refuse.state");
  SaveSmallSsd(profile, state);
  // One figure changed: the geometry is the same, the text is not.
  std::string text = kSmallSsd;
  text.replace(text.find("page_read_us = 45.0"), 19, "page_read_us = 46.0");
  const std::string other = WriteProfile("refuse-other.toml", text);
  const std::string message = OpenError(other, state);
  EXPECT_NE(message.find("saved for profile text hash"), std::string::npos) << message;
  EXPECT_NE(message.find("model ssd"), std::string::npos) << message;
  EXPECT_NE(message.find(other + " has profile text hash"), std::string::npos) << message;
  // Another model altogether.
  EXPECT_NE(OpenError(Profile("hdd-7200-desktop-1t.toml"), state).find("saved for profile"),
            std::string::npos);
}

TEST(ModelStateTest, TruncatedDamagedOrForeignFilesAreRefused) {
  const std::string profile = WriteProfile("refuse2-ssd.toml", kSmallSsd);
  const std::string state = TempPath("refuse2.state");
  SaveSmallSsd(profile, state);
  std::string bytes;
  {
    std::ifstream in(state, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto write = [](const std::string& path, const std::string& b) {
    std::ofstream(path, std::ios::binary) << b;
    return path;
  };
  EXPECT_NE(OpenError(profile, write(TempPath("cut.state"), bytes.substr(0, bytes.size() - 16)))
                .find("damaged or truncated"),
            std::string::npos);
  EXPECT_NE(OpenError(profile, write(TempPath("cut2.state"), bytes.substr(0, 20)))
                .find("damaged or truncated"),
            std::string::npos);
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 1;
  EXPECT_NE(OpenError(profile, write(TempPath("flip.state"), flipped)).find("damaged"),
            std::string::npos);
  std::string v2 = bytes;
  v2[8] = 2;  // the version word
  EXPECT_EQ(OpenError(profile, write(TempPath("v2.state"), v2)),
            TempPath("v2.state") + ": state format version 2; this library reads version 1");
  EXPECT_NE(OpenError(profile, write(TempPath("foreign.state"), "[device]\nmodel = 1\n"))
                .find("not a devmodel state file"),
            std::string::npos);
  EXPECT_EQ(OpenError(profile, TempPath("missing.state")),
            TempPath("missing.state") + ": cannot open file");
}

// A file whose words were changed and whose checksum was made to match (a
// crafted file, not a damaged one): every index the models use is checked
// while loading, so it is refused with a message or loads; it never crashes.
TEST(ModelStateTest, CraftedStatesAreRefusedOrLoadedWithoutACrash) {
  for (const std::string& kind : {std::string("ssd"), std::string("hdd"), std::string("cloud")}) {
    const std::string profile = kind == "ssd"   ? WriteProfile("crafted-ssd.toml", kSmallSsd)
                                : kind == "hdd" ? Profile("hdd-7200-desktop-1t.toml")
                                                : Profile("aws-gp2-100g.toml");
    const std::string state = TempPath("crafted-" + kind + ".state");
    char* err = nullptr;
    devmodel_t* m = devmodel_open(profile.c_str(), 5, &err);
    const uint64_t t = Latest(RunReqs(m, Mixed(13, 300, 64ull << 20, 50, 200000), 0, 1));
    ASSERT_EQ(devmodel_save_state(m, t, state.c_str(), &err), 1) << err;
    devmodel_close(m);
    std::string bytes;
    {
      std::ifstream in(state, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    std::mt19937_64 g(17);
    int refused = 0;
    const size_t words = bytes.size() / 8 - 1;
    for (int round = 0; round < 200; ++round) {
      std::string b = bytes;
      const size_t word = 20 + g() % (words - 20);  // past the header
      const uint64_t value = round % 3 == 0 ? g() : round % 3 == 1 ? g() % 4096 : ~uint64_t{0};
      std::memcpy(&b[word * 8], &value, 8);
      devmodel::internal::Checksum sum;  // of all but the checksum word
      sum.Add(b.data(), b.size() - 8);
      const uint64_t h = sum.Value();
      std::memcpy(&b[b.size() - 8], &h, 8);
      const std::string path = TempPath("crafted.state");
      std::ofstream(path, std::ios::binary) << b;
      devmodel_t* loaded = devmodel_open_state(profile.c_str(), path.c_str(), 0, &err);
      if (loaded == nullptr) {
        ++refused;
        EXPECT_NE(std::string(err).find(path + ": "), std::string::npos) << err;
      }
      devmodel_close(loaded);
    }
    devmodel_free(err);
    EXPECT_GT(refused, 0) << kind;
  }
}

TEST(ModelStateTest, SaveIsRefusedWhileARequestIsHeld) {
  const std::string profile = WriteProfile("held-ssd.toml", kSmallSsd);
  const std::string state = TempPath("held.state");
  std::filesystem::remove(state);
  char* err = nullptr;
  devmodel_t* m = devmodel_open(profile.c_str(), 5, &err);
  devmodel_request w = {DEVMODEL_OP_WRITE, 1, 0, 4096, 1};
  devmodel_result r;
  devmodel_submit_result(m, &w, 1000, &r, &err);
  ASSERT_EQ(r.final, 1);
  // Its completion is later than the save instant.
  EXPECT_EQ(devmodel_save_state(m, 1000, state.c_str(), &err), 0);
  ASSERT_NE(err, nullptr);
  EXPECT_NE(std::string(err).find("after the save instant"), std::string::npos) << err;
  devmodel_free(err);
  err = nullptr;
  devmodel_request rd = {DEVMODEL_OP_READ, 1, 0, 4096, 2};
  devmodel_submit_result(m, &rd, r.deadline_ns, &r, &err);
  ASSERT_EQ(r.final, 0);  // a read waits for the link: not final
  EXPECT_EQ(devmodel_save_state(m, r.deadline_ns, state.c_str(), &err), 0);
  ASSERT_NE(err, nullptr);
  EXPECT_NE(std::string(err).find("1 request(s) not final yet"), std::string::npos) << err;
  devmodel_free(err);
  EXPECT_FALSE(std::filesystem::exists(state));  // nothing written
  devmodel_close(m);
}

}  // namespace

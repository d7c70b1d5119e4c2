// A drive whose precondition's state comes from a state file is the drive
// the replay builds: same completions and counters over a mixed workload;
// a damaged, truncated or foreign file is rebuilt, never used; concurrent
// writers leave one valid file.
#include "state_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "devmodel/profile.h"
#include "rng.h"
#include "ssd_model.h"
#include "test_util.h"

namespace devmodel {
namespace {

namespace fs = std::filesystem;

// 4 dies, 64 blocks of 32 pages of 16 KiB: 65K mapping units, two overwrites each.
constexpr char kSteady[] = R"(
[device]
model = "ssd"
[ssd]
channels = 2
dies_per_channel = 2
planes_per_die = 2
blocks_per_plane = 64
pages_per_block = 32
page_bytes = 16384
mapping_unit_bytes = 4096
precondition = "steady"
precondition_overwrite_factor = 2.0
)";

// Uneven: 3 dies, 100 blocks of 48 pages, SLC cache, round-robin arbitration.
constexpr char kSteadyUneven[] = R"(
[device]
model = "ssd"
[ssd]
channels = 3
dies_per_channel = 1
planes_per_die = 1
blocks_per_plane = 100
pages_per_block = 48
page_bytes = 8192
mapping_unit_bytes = 4096
arbitration = "round_robin"
slc_static_bytes = 4194304
slc_program_us = 200
precondition = "steady"
precondition_overwrite_factor = 0.7
)";

constexpr char kFull[] = R"(
[device]
model = "ssd"
[ssd]
channels = 2
dies_per_channel = 2
planes_per_die = 2
blocks_per_plane = 64
pages_per_block = 32
page_bytes = 16384
mapping_unit_bytes = 4096
precondition = "full"
)";

class StateCacheTest : public ::testing::Test {
 public:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            ("devmodel-state-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Device> Open(const std::string& text, std::uint64_t seed, bool cache) {
    LoadOptions options;
    if (cache) options.state_cache_dir = dir_;
    std::string error;
    auto d = LoadProfileFromString(text, "test.toml", seed, options, &error);
    EXPECT_NE(d, nullptr) << error;
    return d;
  }
  static bool Loaded(const Device& d) {
    return static_cast<const internal::SsdModel&>(d).state_loaded();
  }
  std::vector<fs::path> StateFiles() const {
    std::vector<fs::path> files;
    if (!fs::exists(dir_)) return files;
    for (const auto& e : fs::directory_iterator(dir_)) {
      if (e.path().extension() == ".state") files.push_back(e.path());
    }
    return files;
  }

  std::string dir_;
};

// Reads, writes, trims and flushes at depth 16: the writes run GC over the
// loaded blocks, victims and free lists.
std::vector<TimeNs> RunMixed(Device& d, std::uint64_t seed) {
  internal::Rng rng(seed);
  const std::uint64_t blocks = d.capacity_bytes() / 4096;
  return testing::ClosedLoopTimes(d, 16, 20000, [&](TimeNs) {
    Request r;
    r.queue_id = static_cast<std::uint32_t>(1 + rng.Below(3));
    const std::uint64_t pick = rng.Below(100);
    r.op = pick < 50 ? Op::kRead : pick < 95 ? Op::kWrite : pick < 98 ? Op::kTrim : Op::kFlush;
    if (r.op != Op::kFlush) {
      r.length_bytes = 4096 * (1 + rng.Below(8));
      r.offset_bytes = rng.Below(blocks - 8) * 4096;
    }
    return r;
  });
}

// Replay, cold cache (replay + save), warm cache (load): one drive.
void ExpectLoadedEqualsReplayed(StateCacheTest* t, const std::string& text, std::uint64_t seed) {
  auto replayed = t->Open(text, seed, false);
  auto cold = t->Open(text, seed, true);
  auto warm = t->Open(text, seed, true);
  ASSERT_TRUE(replayed && cold && warm);
  EXPECT_FALSE(StateCacheTest::Loaded(*cold));
  EXPECT_TRUE(StateCacheTest::Loaded(*warm));
  EXPECT_EQ(replayed->CountersJson(), warm->CountersJson());
  std::string why;
  EXPECT_TRUE(static_cast<internal::SsdModel&>(*warm).ftl().CheckConsistency(&why)) << why;
  const auto expected = RunMixed(*replayed, 7);
  EXPECT_EQ(RunMixed(*cold, 7), expected);
  EXPECT_EQ(RunMixed(*warm, 7), expected);
  EXPECT_EQ(replayed->CountersJson(), cold->CountersJson());
  EXPECT_EQ(replayed->CountersJson(), warm->CountersJson());
  EXPECT_TRUE(static_cast<internal::SsdModel&>(*warm).ftl().CheckConsistency(&why)) << why;
}

TEST_F(StateCacheTest, SteadyDriveLoadedGivesReplaysCompletionsAndCounters) {
  ExpectLoadedEqualsReplayed(this, kSteady, 3);
  EXPECT_EQ(StateFiles().size(), 1u);
}

TEST_F(StateCacheTest, UnevenSteadyDriveLoadedGivesReplaysCompletionsAndCounters) {
  ExpectLoadedEqualsReplayed(this, kSteadyUneven, 11);
  EXPECT_EQ(StateFiles().size(), 1u);
}

TEST_F(StateCacheTest, FullDriveKeepsNoFileAndIsUnchanged) {
  auto replayed = Open(kFull, 3, false);
  auto cached = Open(kFull, 3, true);
  EXPECT_TRUE(StateFiles().empty());
  EXPECT_FALSE(Loaded(*cached));
  EXPECT_EQ(RunMixed(*replayed, 7), RunMixed(*cached, 7));
  EXPECT_EQ(replayed->CountersJson(), cached->CountersJson());
}

TEST_F(StateCacheTest, SeedAndEveryKeyOfTheSectionMakeTheirOwnFile) {
  Open(kSteady, 3, true);
  Open(kSteady, 4, true);
  std::string other = kSteady;
  other.replace(other.find("2.0"), 3, "2.5");
  Open(other, 3, true);
  std::string timing = kSteady;  // a key the state does not depend on: still keyed
  timing += "page_read_us = 41\n";
  Open(timing, 3, true);
  EXPECT_EQ(StateFiles().size(), 4u);
  EXPECT_TRUE(Loaded(*Open(other, 3, true)));
  EXPECT_TRUE(Loaded(*Open(kSteady, 4, true)));
}

TEST_F(StateCacheTest, KeyNamesFormatSourceSeedAndSection) {
  const std::string key = internal::FtlStateKey("channels = int 2\n", 9);
  EXPECT_NE(key.find("format " + std::to_string(internal::kStateFormatVersion)), std::string::npos);
  EXPECT_NE(key.find(std::string("source ") + internal::DevmodelSourceHash()), std::string::npos);
  EXPECT_EQ(std::string(internal::DevmodelSourceHash()).size(), 64u);
  EXPECT_NE(key.find("seed 9\n"), std::string::npos);
  EXPECT_NE(key.find("channels = int 2\n"), std::string::npos);
}

// Damages the single state file with `damage`, then expects a replay (no
// load) that equals the drive built without a cache, a rewritten file, and
// a load from it at the next start.
template <class Damage>
void ExpectDamagedFileRebuilt(StateCacheTest* t, Damage damage) {
  t->Open(kSteady, 3, true);
  const auto files = t->StateFiles();
  ASSERT_EQ(files.size(), 1u);
  damage(files[0]);
  auto replayed = t->Open(kSteady, 3, false);
  auto rebuilt = t->Open(kSteady, 3, true);
  EXPECT_FALSE(StateCacheTest::Loaded(*rebuilt));
  EXPECT_EQ(RunMixed(*rebuilt, 5), RunMixed(*replayed, 5));
  EXPECT_EQ(rebuilt->CountersJson(), replayed->CountersJson());
  EXPECT_TRUE(StateCacheTest::Loaded(*t->Open(kSteady, 3, true)));
}

void FlipByte(const fs::path& path, std::uint64_t at) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(at));
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x10);
  f.seekp(static_cast<std::streamoff>(at));
  f.write(&c, 1);
}

TEST_F(StateCacheTest, TruncatedFileIsRebuilt) {
  ExpectDamagedFileRebuilt(this, [](const fs::path& p) { fs::resize_file(p, fs::file_size(p) - 4); });
}

TEST_F(StateCacheTest, EmptyFileIsRebuilt) {
  ExpectDamagedFileRebuilt(this, [](const fs::path& p) { fs::resize_file(p, 0); });
}

TEST_F(StateCacheTest, FlippedL2pByteIsRebuilt) {
  ExpectDamagedFileRebuilt(this, [](const fs::path& p) { FlipByte(p, fs::file_size(p) - 100); });
}

TEST_F(StateCacheTest, FlippedMetadataByteIsRebuilt) {
  ExpectDamagedFileRebuilt(this, [](const fs::path& p) {
    std::uint64_t key_bytes = 0;  // the header's word at offset 16
    std::ifstream f(p, std::ios::binary);
    f.seekg(16);
    f.read(reinterpret_cast<char*>(&key_bytes), 8);
    FlipByte(p, 64 + (key_bytes + 7) / 8 * 8 + 8 * 9 + 1);  // the frontier die
  });
}

TEST_F(StateCacheTest, BadMagicVersionOrHeaderIsRebuilt) {
  for (std::uint64_t at : {0, 8, 16, 40}) {
    ExpectDamagedFileRebuilt(this, [at](const fs::path& p) { FlipByte(p, at); });
  }
}

TEST_F(StateCacheTest, AnotherDrivesFileUnderThisNameIsRebuilt) {
  Open(kSteady, 4, true);  // seed 4's file...
  const auto files = StateFiles();
  ASSERT_EQ(files.size(), 1u);
  // ...copied to the name of seed 3's file: the key inside differs.
  Open(kSteady, 3, true);  // writes seed 3's file
  std::vector<fs::path> both = StateFiles();
  ASSERT_EQ(both.size(), 2u);
  const fs::path mine = both[0] == files[0] ? both[1] : both[0];
  fs::copy_file(files[0], mine, fs::copy_options::overwrite_existing);
  auto replayed = Open(kSteady, 3, false);
  auto rebuilt = Open(kSteady, 3, true);
  EXPECT_FALSE(Loaded(*rebuilt));
  EXPECT_EQ(RunMixed(*rebuilt, 5), RunMixed(*replayed, 5));
  EXPECT_TRUE(Loaded(*Open(kSteady, 3, true)));
}

TEST_F(StateCacheTest, UnwritableDirectoryStillBuildsTheDrive) {
  fs::create_directories(dir_);
  const std::string file = dir_ + "/not-a-dir";
  std::ofstream(file) << "x";
  LoadOptions options;
  options.state_cache_dir = file;  // a file, not a directory: cannot save
  std::string error;
  auto d = LoadProfileFromString(kSteady, "test.toml", 3, options, &error);
  ASSERT_NE(d, nullptr) << error;
  auto replayed = Open(kSteady, 3, false);
  EXPECT_EQ(RunMixed(*d, 5), RunMixed(*replayed, 5));
}

TEST_F(StateCacheTest, ConcurrentWritersLeaveOneValidFile) {
  constexpr int kWriters = 4;
  std::vector<std::unique_ptr<Device>> drives(kWriters);
  std::vector<std::thread> threads;
  LoadOptions options;
  options.state_cache_dir = dir_;
  for (int i = 0; i < kWriters; ++i) {
    threads.emplace_back([&, i] {
      std::string error;
      drives[i] = LoadProfileFromString(kSteady, "test.toml", 3, options, &error);
    });
  }
  for (auto& t : threads) t.join();
  auto replayed = Open(kSteady, 3, false);
  const auto expected = RunMixed(*replayed, 5);
  for (auto& d : drives) {
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(RunMixed(*d, 5), expected);
  }
  EXPECT_EQ(StateFiles().size(), 1u);
  std::size_t others = 0;
  for (const auto& e : fs::directory_iterator(dir_)) others += e.path().extension() != ".state";
  EXPECT_EQ(others, 0u);  // no temporary file left
  auto warm = Open(kSteady, 3, true);
  EXPECT_TRUE(Loaded(*warm));
  EXPECT_EQ(RunMixed(*warm, 5), expected);
}

TEST_F(StateCacheTest, DirectoryKeepsAtMostTheLimitOfFiles) {
  fs::create_directories(dir_);
  for (int i = 0; i < 2 * internal::kStateCacheMaxFiles; ++i) {
    std::ofstream(dir_ + "/ftl-old" + std::to_string(i) + ".state") << "stale";
  }
  Open(kSteady, 3, true);
  EXPECT_EQ(StateFiles().size(), static_cast<std::size_t>(internal::kStateCacheMaxFiles));
  EXPECT_TRUE(Loaded(*Open(kSteady, 3, true)));  // the new file is kept
}

TEST(FtlStateTest, LoadStateRefusesAnL2pThatDisagreesWithTheCounts) {
  internal::FtlGeometry g;
  g.dies = 2;
  g.blocks_per_die = 32;
  g.slots_per_block = 64;
  g.exported_slots = 3000;
  internal::Ftl source(g, nullptr);
  internal::Rng rng(1);
  source.BuildSteadyState(6000, rng);
  ASSERT_TRUE(source.CanSaveState());
  std::string meta;
  source.SaveState(&meta);
  std::vector<std::uint32_t> l2p(g.exported_slots);
  for (std::uint64_t i = 0; i < g.exported_slots; ++i) l2p[i] = source.Lookup(i);
  internal::Ftl good(g, nullptr);
  std::string why;
  ASSERT_TRUE(good.LoadState(meta.data(), meta.size(), l2p.data(), &why)) << why;
  EXPECT_TRUE(good.CheckConsistency(&why)) << why;
  EXPECT_EQ(good.ClosedBlockValidCounts(), source.ClosedBlockValidCounts());

  std::vector<std::uint32_t> wrong = l2p;
  wrong[2] = internal::Ftl::kUnmapped;  // one unit fewer than the counts say
  internal::Ftl ftl(g, nullptr);
  EXPECT_FALSE(ftl.LoadState(meta.data(), meta.size(), wrong.data(), &why));
  EXPECT_FALSE(ftl.LoadState(meta.data(), meta.size() - 8, l2p.data(), &why));
  wrong = l2p;
  wrong[5] = static_cast<std::uint32_t>(g.dies * g.blocks_per_die * g.slots_per_block);
  EXPECT_FALSE(ftl.LoadState(meta.data(), meta.size(), wrong.data(), &why));
  // Untouched by the refusals: still a fresh FTL that takes the good state.
  EXPECT_EQ(ftl.mapped_slots(), 0u);
  EXPECT_EQ(ftl.Lookup(0), internal::Ftl::kUnmapped);
  EXPECT_EQ(ftl.free_blocks(0), g.blocks_per_die);
  ASSERT_TRUE(ftl.LoadState(meta.data(), meta.size(), l2p.data(), &why)) << why;
  EXPECT_TRUE(ftl.CheckConsistency(&why)) << why;
  EXPECT_EQ(ftl.counters().nand_slots_programmed, source.counters().nand_slots_programmed);
}

}  // namespace
}  // namespace devmodel

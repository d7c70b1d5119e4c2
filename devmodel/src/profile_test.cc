#include "devmodel/profile.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "devmodel/faults.h"
#include "devmodel/hdd.h"
#include "devmodel/ssd.h"

namespace devmodel {
namespace {

TEST(ProfileTest, EveryShippedProfileLoads) {
  int loaded = 0;
  for (const auto& entry : std::filesystem::directory_iterator(DEVMODEL_PROFILE_DIR)) {
    if (entry.path().extension() != ".toml") continue;
    std::string error;
    auto device = LoadProfile(entry.path().string(), 1, &error);
    EXPECT_NE(device, nullptr) << error;
    // CheckProfile (no state built) agrees with the device LoadProfile built.
    ProfileSummary summary;
    EXPECT_TRUE(CheckProfile(entry.path().string(), &summary, &error)) << error;
    if (device != nullptr) {
      EXPECT_EQ(summary.capacity_bytes, device->capacity_bytes()) << entry.path();
      EXPECT_EQ(summary.logical_block_bytes, device->logical_block_bytes()) << entry.path();
      EXPECT_EQ(summary.deadlines_final, device->deadlines_final()) << entry.path();
      EXPECT_EQ(summary.rotation_rate, device->rotation_rate_rpm()) << entry.path();
      EXPECT_FALSE(summary.model.empty());
      EXPECT_GT(device->capacity_bytes(), 0u);
      printf("[ loaded   ] %-28s %8.1f GB, rpm %u, %6.1f MiB model state\n",
             entry.path().filename().c_str(), device->capacity_bytes() / 1e9,
             device->rotation_rate_rpm(), device->MemoryBytes() / 1048576.0);
    }
    ++loaded;
  }
  EXPECT_GE(loaded, 7);
}

struct BadProfile {
  const char* what;
  const char* text;
  const char* expected;  // substring of the error
};

constexpr char kSsdHead[] = "[device]\nmodel = \"ssd\"\n[ssd]\n";

class BadProfileTest : public ::testing::TestWithParam<BadProfile> {};

TEST_P(BadProfileTest, GivesItsExpectedMessage) {
  std::string error;
  auto device = LoadProfileFromString(GetParam().text, "bad.toml", 1, &error);
  EXPECT_EQ(device, nullptr);
  EXPECT_NE(error.find(GetParam().expected), std::string::npos)
      << "case: " << GetParam().what << "\nerror: " << error;
}

std::string Ssd(const char* body) { return std::string(kSsdHead) + body; }

const std::string kUnknownKey = Ssd("chanels = 8\n");
const std::string kWrongType = Ssd("channels = \"eight\"\n");
const std::string kOutOfRange = Ssd("channels = 0\n");
const std::string kFloatForInt = Ssd("channels = 8.5\n");
const std::string kNegativeTime = Ssd("page_read_us = -1\n");
const std::string kBadChoice = Ssd("precondition = \"aged\"\n");
const std::string kNoOp = Ssd("capacity_bytes = 1099511627776\n");

INSTANTIATE_TEST_SUITE_P(
    Table, BadProfileTest,
    ::testing::Values(
        BadProfile{"unknown key", kUnknownKey.c_str(),
                   "bad.toml:4: unknown key 'ssd.chanels' (allowed in [ssd]: channels,"},
        BadProfile{
            "wrong type", kWrongType.c_str(),
            "bad.toml:4: key 'ssd.channels' must be an integer in [1, 64] count, got a string"},
        BadProfile{"out of range", kOutOfRange.c_str(),
                   "bad.toml:4: key 'ssd.channels' must be an integer in [1, 64] count, got 0"},
        BadProfile{"float for an integer", kFloatForInt.c_str(),
                   "key 'ssd.channels' must be an integer in [1, 64] count, got a float"},
        BadProfile{"negative time", kNegativeTime.c_str(),
                   "key 'ssd.page_read_us' must be a number in [0, 100000] us, got -1"},
        BadProfile{
            "bad choice", kBadChoice.c_str(),
            "key 'ssd.precondition' must be one of \"none\" \"full\" \"steady\", got \"aged\""},
        BadProfile{"capacity beyond raw", kNoOp.c_str(),
                   "bad.toml:4: ssd.capacity_bytes must be in [4096, "},
        BadProfile{"syntax", "[device\nmodel = 1\n", "bad.toml:1: TOML syntax error: "},
        BadProfile{"duplicate key", "[device]\nmodel = \"ssd\"\nmodel = \"hdd\"\n",
                   "bad.toml:3: TOML syntax error: value (\"model\") already exists (value defined "
                   "twice)"},
        BadProfile{"binary", "[device]\nmodel = \"zero\"\n\x01\xff\n",
                   "bad.toml:3: not a TOML text file: control character 0x01 at byte 24"},
        BadProfile{"not UTF-8", "[device]\nname = \"\xff\"\n",
                   "bad.toml:2: not a TOML text file: byte 0xff that is not UTF-8 at byte 17"},
        BadProfile{"beyond 64 bits",
                   "[device]\nmodel = \"zero\"\n[zero]\ncapacity_bytes = 99999999999999999999\n",
                   "bad.toml:4: key 'zero.capacity_bytes' must be an integer in [1048576, "
                   "1152921504606846976] bytes, got 99999999999999999999 (beyond 64-bit integers)"},
        BadProfile{"too many erase blocks",
                   "[device]\nmodel = \"ssd\"\n[ssd]\nchannels = 64\ndies_per_channel = 64\n"
                   "blocks_per_plane = 4096\npages_per_block = 1\npage_bytes = 4096\n"
                   "planes_per_die = 1\n",
                   "bad.toml:4: ssd geometry: ssd.channels x ssd.dies_per_channel x "
                   "ssd.blocks_per_plane (16777216) must be <= 4194304 erase blocks"},
        BadProfile{
            "cloud baseline bounds inverted",
            "[device]\nmodel = \"cloud\"\n[cloud]\nbacking = \"zero\"\niops_per_gib = 3\n"
            "iops_baseline_min = 20000\niops_baseline_max = 100\n",
            "bad.toml:6: cloud.iops_baseline_min (20000) must be <= cloud.iops_baseline_max (100)"},
        BadProfile{"burst bucket beyond int64 nano-credits",
                   "[device]\nmodel = \"cloud\"\n[cloud]\nbacking = \"zero\"\n"
                   "burst_credits = 1000000000000\n",
                   "key 'cloud.burst_credits' must be an integer in [0, 1000000000] I/O credits"},
        BadProfile{"no device section", "[ssd]\nchannels = 4\n", "missing section [device]"},
        BadProfile{
            "unknown model", "[device]\nmodel = \"tape\"\n",
            "key 'device.model' must be one of \"ssd\" \"hdd\" \"cloud\" \"zero\", got \"tape\""},
        BadProfile{"unknown section", "[device]\nmodel = \"zero\"\n[nvme]\nx = 1\n",
                   "unknown section 'nvme'"},
        BadProfile{"unused section", "[device]\nmodel = \"zero\"\n[hdd]\nrpm = 7200\n",
                   "section [hdd] is not used by model 'zero'"},
        BadProfile{"cloud without backing",
                   "[device]\nmodel = \"cloud\"\n[cloud]\niops_cap = 3000\n",
                   "missing key 'cloud.backing'"},
        BadProfile{"zone list element",
                   "[device]\nmodel = \"hdd\"\n[hdd]\nzone_mb_s = [200, \"x\"]\n",
                   "key 'hdd.zone_mb_s' must be an array of numbers in [1, 5000]"},
        BadProfile{"impossible seek curve",
                   "[device]\nmodel = \"hdd\"\n[hdd]\naverage_seek_ms = 16.9\n",
                   "bad.toml:4: hdd.average_seek_ms (16.9) must be in ["},
        BadProfile{"empty profile", "", "missing section [device]"}));

TEST(ProfileTest, CheckGivesLoadsMessages) {
  const std::string text = std::string(kSsdHead) + "channels = 2\ncapacity_bytes = 1099511627776\n";
  std::string check_error, load_error;
  EXPECT_FALSE(CheckProfileFromString(text, "bad.toml", nullptr, &check_error));
  EXPECT_EQ(LoadProfileFromString(text, "bad.toml", 1, &load_error), nullptr);
  EXPECT_EQ(check_error, load_error);
  EXPECT_EQ(check_error.rfind("bad.toml:5: ssd.capacity_bytes must be in [4096, ", 0), 0u)
      << check_error;
}

TEST(ProfileTest, ModelErrorsPointAtTheLineOfTheKeyTheyName) {
  std::string error;
  EXPECT_EQ(LoadProfileFromString("[device]\nmodel = \"zero\"\n[zero]\nlogical_block_bytes = 4096\n"
                                  "capacity_bytes = 1048577\n",
                                  "bad.toml", 1, &error),
            nullptr);
  EXPECT_EQ(error,
            "bad.toml:5: zero.capacity_bytes (1048577) must be a positive multiple of "
            "zero.logical_block_bytes (4096, 512 or 4096)");
}

TEST(ProfileTest, DirectoryIsNotAProfile) {
  std::string error;
  EXPECT_FALSE(CheckProfile(DEVMODEL_PROFILE_DIR, nullptr, &error));
  EXPECT_EQ(error, std::string(DEVMODEL_PROFILE_DIR) + ": is a directory, not a profile");
}

TEST(ProfileTest, MissingFileNamesThePath) {
  std::string error;
  EXPECT_EQ(LoadProfile("/nonexistent/x.toml", 1, &error), nullptr);
  EXPECT_EQ(error, "/nonexistent/x.toml: cannot open file");
}

TEST(ProfileTest, KeyReferenceListsEveryKeyWithItsRange) {
  const std::string ref = ProfileKeyReference();
  EXPECT_NE(ref.find("ssd.page_read_us: a number in [0, 100000] us"), std::string::npos) << ref;
  EXPECT_NE(ref.find("hdd.queue_policy: one of \"fifo\" \"sptf\""), std::string::npos);
}

TEST(ProfileTest, KeyDefaultsAreTheConfigsInTheKeysUnit) {
  const std::vector<ProfileKeyInfo> keys = ProfileKeys();
  const std::string ref = ProfileKeyReference();
  EXPECT_EQ(keys.size(), static_cast<std::size_t>(std::count(ref.begin(), ref.end(), '\n')));
  auto find = [&keys](const std::string& section, const std::string& name) {
    for (const ProfileKeyInfo& k : keys) {
      if (k.section == section && k.name == name) return k;
    }
    ADD_FAILURE() << section << "." << name << " not listed";
    return ProfileKeyInfo{};
  };
  const SsdConfig ssd;
  const ProfileKeyInfo read = find("ssd", "page_read_us");
  EXPECT_EQ(read.allowed, "a number in [0, 100000] us");
  ASSERT_TRUE(read.has_default);
  EXPECT_EQ(read.default_value, static_cast<double>(ssd.page_read_ns) / 1e3);
  EXPECT_EQ(find("ssd", "channels").default_value, static_cast<double>(ssd.channels));
  EXPECT_EQ(find("ssd", "power_loss_protection").default_value,
            ssd.power_loss_protection ? 1.0 : 0.0);
  const HddConfig hdd;
  EXPECT_EQ(find("hdd", "average_seek_ms").default_value,
            static_cast<double>(hdd.average_seek_ns) / 1e6);
  EXPECT_EQ(find("fault", "factor").default_value, static_cast<double>(Fault{}.factor_ppm) / 1e6);
  EXPECT_FALSE(find("device", "model").has_default);
  EXPECT_FALSE(find("hdd", "zone_mb_s").has_default);
}

TEST(ProfileTest, ReadmeKeyReferenceIsTheLoaders) {
  std::ifstream in(std::string(DEVMODEL_PROFILE_DIR) + "/README.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string readme = text.str();
  const std::string open = "<!-- devmodel-check --keys -->\n```text\n";
  const std::size_t begin = readme.find(open);
  ASSERT_NE(begin, std::string::npos) << "devmodel/profiles/README.md lacks " << open;
  const std::size_t end = readme.find("```", begin + open.size());
  ASSERT_NE(end, std::string::npos);
  EXPECT_EQ(readme.substr(begin + open.size(), end - begin - open.size()), ProfileKeyReference())
      << "regenerate the block with devmodel-check --keys";
}

}  // namespace
}  // namespace devmodel

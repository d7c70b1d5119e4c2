#include "devmodel/profile.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

namespace devmodel {
namespace {

TEST(ProfileTest, EveryShippedProfileLoads) {
  int loaded = 0;
  for (const auto& entry : std::filesystem::directory_iterator(DEVMODEL_PROFILE_DIR)) {
    if (entry.path().extension() != ".toml") continue;
    std::string error;
    auto device = LoadProfile(entry.path().string(), 1, &error);
    EXPECT_NE(device, nullptr) << error;
    if (device != nullptr) {
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
                   "bad.toml: capacity_bytes must be in [4096, "},
        BadProfile{"syntax", "[device\nmodel = 1\n", "bad.toml: TOML syntax error"},
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
                   "average_seek_ns must be in ["},
        BadProfile{"empty profile", "", "missing section [device]"}));

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

}  // namespace
}  // namespace devmodel

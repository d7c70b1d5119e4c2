#include "units.h"

#include <gtest/gtest.h>

namespace blkgen {
namespace {

struct SizeCase {
  const char* text;
  uint64_t bytes;
};

TEST(ParseSizeTest, FioSuffixes) {
  // fio 3.33 with its default kb_base=1024.
  const SizeCase cases[] = {
      {"0", 0},           {"512", 512},
      {"4k", 4096},       {"4K", 4096},
      {"4kb", 4096},      {"4KB", 4096},
      {"4kib", 4000},     {"4KiB", 4000},
      {"1m", 1ULL << 20}, {"1mb", 1ULL << 20},
      {"1mib", 1000000},  {"16M", 16ULL << 20},
      {"1g", 1ULL << 30}, {"2GiB", 2000000000ULL},
      {"1t", 1ULL << 40}, {"1p", 1ULL << 50},
      {"0x1000", 4096},   {"0x10k", 16 * 1024},
  };
  for (const SizeCase& c : cases) {
    uint64_t v = 12345;
    Status s = ParseSize(c.text, &v);
    EXPECT_TRUE(s.ok()) << c.text << ": " << s.message();
    EXPECT_EQ(v, c.bytes) << c.text;
  }
}

TEST(ParseSizeTest, RejectsBadInput) {
  for (const char* text : {"", "k", "4q", "4kz", "-1", "+4k", "4 k", "50%", "4.5k",
                           "99999999999999999999", "16385p"}) {
    uint64_t v = 7;
    Status s = ParseSize(text, &v);
    EXPECT_FALSE(s.ok()) << text;
    EXPECT_EQ(s.code(), Status::Code::kUsage) << text;
    EXPECT_EQ(v, 7u) << text;
  }
}

TEST(ParseDurationTest, FioSuffixes) {
  constexpr uint64_t kSec = 1000000000ULL;
  const struct {
    const char* text;
    uint64_t ns;
  } cases[] = {
      {"1", kSec},         {"60", 60 * kSec},    {"0", 0},
      {"10us", 10000},     {"10usec", 10000},    {"500ms", 500000000},
      {"5msec", 5000000},  {"2s", 2 * kSec},     {"2m", 120 * kSec},
      {"1h", 3600 * kSec}, {"1d", 86400 * kSec}, {"3S", 3 * kSec},
  };
  for (const auto& c : cases) {
    uint64_t ns = 0;
    Status s = ParseDuration(c.text, kSec, &ns);
    EXPECT_TRUE(s.ok()) << c.text << ": " << s.message();
    EXPECT_EQ(ns, c.ns) << c.text;
  }
}

TEST(ParseDurationTest, PlainNumberUsesDefaultUnit) {
  uint64_t ns = 0;
  ASSERT_TRUE(ParseDuration("7", 1000, &ns).ok());
  EXPECT_EQ(ns, 7000u);
}

TEST(ParseDurationTest, RejectsBadInput) {
  // fio reads "10sec" as 10 us and "10ns" as 10 us; blkgen refuses both.
  for (const char* text : {"", "s", "10sec", "10ns", "1x", "-1", "1.5s"}) {
    uint64_t ns = 3;
    EXPECT_FALSE(ParseDuration(text, 1000000000ULL, &ns).ok()) << text;
    EXPECT_EQ(ns, 3u);
  }
}

TEST(ParseBoolTest, OnlyZeroAndOne) {
  bool b = false;
  EXPECT_TRUE(ParseBool("1", &b).ok());
  EXPECT_TRUE(b);
  EXPECT_TRUE(ParseBool("0", &b).ok());
  EXPECT_FALSE(b);
  EXPECT_FALSE(ParseBool("true", &b).ok());
  EXPECT_FALSE(ParseBool("2", &b).ok());
}

}  // namespace
}  // namespace blkgen

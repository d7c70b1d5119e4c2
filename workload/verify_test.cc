#include "verify.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace blkgen {
namespace {

TEST(VerifyTest, Crc32cCheckValue) {
  // The CRC-32C check value (RFC 3720 appendix, "123456789").
  const char* text = "123456789";
  EXPECT_EQ(Crc32c(reinterpret_cast<const uint8_t*>(text), 9), 0xe3069283u);
  std::vector<uint8_t> zeros(32, 0);
  EXPECT_EQ(Crc32c(zeros.data(), zeros.size()), 0x8a9136aau);  // RFC 3720 B.4
}

TEST(VerifyTest, PortableCrc32cMatchesAtEveryLengthAndAlignment) {
  const char* text = "123456789";
  EXPECT_EQ(Crc32cPortable(reinterpret_cast<const uint8_t*>(text), 9), 0xe3069283u);
  std::vector<uint8_t> data(4096 + 64);
  uint64_t x = 0x9e3779b97f4a7c15ULL;
  for (uint8_t& b : data) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    b = static_cast<uint8_t>(x >> 56);
  }
  for (size_t start = 0; start < 9; ++start) {
    for (size_t n : {0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 4000, 4096}) {
      EXPECT_EQ(Crc32cPortable(data.data() + start, n), Crc32c(data.data() + start, n))
          << "start " << start << " length " << n;
    }
  }
}

TEST(VerifyTest, StampedBlockChecksAndEveryChangeShows) {
  std::vector<uint8_t> block(4096);
  for (size_t i = 0; i < block.size(); ++i) block[i] = static_cast<uint8_t>(i * 7);
  StampBlock(block.data(), 4096, 8192, 3, 17);
  BlockIdentity expected;
  expected.offset = 8192;
  expected.job = 3;
  expected.generation = 17;
  BlockIdentity want, found;
  EXPECT_TRUE(CheckBlock(block.data(), 4096, expected, true, &want, &found));

  const struct {
    const char* what;
    size_t byte;  // flipped
  } flips[] = {{"magic", 0}, {"crc", 5},         {"offset", 9}, {"length", 16},
               {"job", 20},  {"generation", 24}, {"data", 4000}};
  for (const auto& f : flips) {
    std::vector<uint8_t> bad = block;
    bad[f.byte] ^= 1;
    EXPECT_FALSE(CheckBlock(bad.data(), 4096, expected, true, &want, &found)) << f.what;
  }
  // A stale block: right place, older generation.
  BlockIdentity newer = expected;
  newer.generation = 18;
  EXPECT_FALSE(CheckBlock(block.data(), 4096, newer, true, &want, &found));
  EXPECT_EQ(want.generation, 18u);
  EXPECT_EQ(found.generation, 17u);
  // Without the writer known, job and generation are not checked.
  EXPECT_TRUE(CheckBlock(block.data(), 4096, newer, false, &want, &found));
  // A block read at another offset.
  BlockIdentity elsewhere = expected;
  elsewhere.offset = 0;
  EXPECT_FALSE(CheckBlock(block.data(), 4096, elsewhere, false, &want, &found));
  EXPECT_EQ(found.offset, 8192u);
  EXPECT_EQ(want.offset, 0u);
}

TEST(VerifyTest, TrimmedBlockContent) {
  std::vector<uint8_t> block(4096);
  for (size_t i = 0; i < block.size(); ++i) block[i] = static_cast<uint8_t>(i * 13 + 1);
  StampBlock(block.data(), 4096, 4096, 2, 9);
  BlockIdentity written;
  written.offset = 4096;
  written.job = 2;
  written.generation = 9;
  EXPECT_EQ(ClassifyTrimmed(block.data(), 4096, written), TrimmedContent::kUnchanged);

  std::vector<uint8_t> zeros(4096, 0x00), ones(4096, 0xff);
  EXPECT_EQ(ClassifyTrimmed(zeros.data(), 4096, written), TrimmedContent::kZeros);
  EXPECT_EQ(ClassifyTrimmed(ones.data(), 4096, written), TrimmedContent::kOnes);
  // Almost zeros: one byte set, first or last.
  zeros[0] = 1;
  EXPECT_EQ(ClassifyTrimmed(zeros.data(), 4096, written), TrimmedContent::kOther);
  zeros[0] = 0;
  zeros[4095] = 1;
  EXPECT_EQ(ClassifyTrimmed(zeros.data(), 4096, written), TrimmedContent::kOther);
  ones[100] = 0xfe;
  EXPECT_EQ(ClassifyTrimmed(ones.data(), 4096, written), TrimmedContent::kOther);

  // An older write of the block is not "unchanged": the trim came after
  // generation 10.
  BlockIdentity later = written;
  later.generation = 10;
  EXPECT_EQ(ClassifyTrimmed(block.data(), 4096, later), TrimmedContent::kOther);
  // Nor is a good block when the content before the trim is unknown.
  BlockIdentity unknown = written;
  unknown.generation = 0;
  EXPECT_EQ(ClassifyTrimmed(block.data(), 4096, unknown), TrimmedContent::kOther);
  // Nor a damaged one.
  block[2000] ^= 4;
  EXPECT_EQ(ClassifyTrimmed(block.data(), 4096, written), TrimmedContent::kOther);
}

TEST(VerifyTest, ReadHeaderReturnsTheStoredFields) {
  std::vector<uint8_t> block(512, 0x5a);
  StampBlock(block.data(), 512, 1 << 20, 7, 123456789012ULL);
  const BlockIdentity h = ReadHeader(block.data());
  EXPECT_EQ(h.magic, kVerifyMagic);
  EXPECT_EQ(h.crc32c, Crc32c(block.data() + 8, 504));
  EXPECT_EQ(h.offset, 1u << 20);
  EXPECT_EQ(h.length, 512u);
  EXPECT_EQ(h.job, 7u);
  EXPECT_EQ(h.generation, 123456789012ULL);
}

}  // namespace
}  // namespace blkgen

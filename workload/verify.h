// Block verification (fio's verify=crc32c, with blkgen's own header): every
// block a verify job writes starts with a 32-byte header, little-endian:
//   magic "BLKV" (u32) | crc32c (u32) | offset (u64) | length (u32) |
//   job index (u32) | generation (u64)
// The CRC-32C (Castagnoli, reflected, init and final xor ~0) covers the block
// from byte 8 to its end, header fields included, so any changed byte,
// misplaced block (offset), short block (length) or stale block (job,
// generation: the writer's sequence number of the write) shows.
// crc32c uses SSE4.2's crc32 instruction when the CPU has it, tables else.
// Thread-safety: pure functions.
#ifndef BLKGEN_VERIFY_H_
#define BLKGEN_VERIFY_H_

#include <cstddef>
#include <cstdint>

namespace blkgen {

inline constexpr uint32_t kVerifyMagic = 0x564b4c42;  // "BLKV" little-endian
inline constexpr uint32_t kVerifyHeaderBytes = 32;

uint32_t Crc32c(const uint8_t* data, size_t n);
// The same CRC without SSE4.2 (slicing-by-8 tables), whatever the CPU has.
uint32_t Crc32cPortable(const uint8_t* data, size_t n);

// What a block header says, or should say.
struct BlockIdentity {
  uint32_t magic = 0;
  uint32_t crc32c = 0;  // expected: computed over the data; found: stored
  uint64_t offset = 0;
  uint32_t length = 0;
  uint32_t job = 0;
  uint64_t generation = 0;
};

// The header of the block at `buf` as it is stored (crc32c: the stored one).
// REQUIRES: kVerifyHeaderBytes readable at buf.
BlockIdentity ReadHeader(const uint8_t* buf);

// Writes the header of a block of `length` bytes at `buf` (the rest of the
// block is left as it is) and its CRC. REQUIRES: length >= kVerifyHeaderBytes.
void StampBlock(uint8_t* buf, uint32_t length, uint64_t offset, uint32_t job, uint64_t generation);

// Checks the block read into `buf`. `expected` holds offset and length, and
// job and generation when `check_writer` (the reader knows who wrote it
// last). On a mismatch fills *found (and the computed CRC into
// expected_out->crc32c) and returns false.
bool CheckBlock(const uint8_t* buf, uint32_t length, const BlockIdentity& expected,
                bool check_writer, BlockIdentity* expected_out, BlockIdentity* found);

// What a block read back after a trim holds. A device may deallocate it
// (NVMe DLFEAT 001b: zeros, 010b: ones) or keep it as it was (a Dataset
// Management deallocate is advisory; ATA's deterministic TRIM promises only
// the same data on every read).
enum class TrimmedContent : uint8_t {
  kZeros,      // every byte 0x00
  kOnes,       // every byte 0xff
  kUnchanged,  // the block as last written: `written` checks out
  kOther,      // anything else
};

// Classifies the block read into `buf` after a trim of a block last written
// as `written` (offset, job, generation; generation 0 = unknown, so never
// kUnchanged). REQUIRES: length >= kVerifyHeaderBytes.
TrimmedContent ClassifyTrimmed(const uint8_t* buf, uint32_t length, const BlockIdentity& written);

}  // namespace blkgen

#endif  // BLKGEN_VERIFY_H_

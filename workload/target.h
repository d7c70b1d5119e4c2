// Target: the file or block device a job does I/O to, opened and checked
// against the job's region before the run: block devices must hold the
// region, regular files are created and extended as fio does (data written
// out when the job reads, so reads hit allocated blocks; ftruncate when it
// only writes).
// Thread-safety: none; one job.
#ifndef BLKGEN_TARGET_H_
#define BLKGEN_TARGET_H_

#include <cstdint>
#include <string>

#include "job_spec.h"
#include "status.h"

namespace blkgen {

class Target {
 public:
  Target() = default;
  Target(const Target&) = delete;
  Target& operator=(const Target&) = delete;
  ~Target();

  // Opens spec.EffectiveFilename() for the job's directions and resolves the
  // region. `fill_seed` seeds the data written when a file is laid out.
  // Errors name the path and carry the errno text.
  Status Open(const JobSpec& spec, uint64_t fill_seed);

  int fd() const { return fd_; }
  bool is_block_device() const { return is_block_device_; }
  uint64_t region_offset() const { return region_offset_; }  // bytes
  uint64_t region_bytes() const { return region_bytes_; }    // bytes

 private:
  Status LayOut(const std::string& path, uint64_t from, uint64_t to, uint64_t fill_seed);

  int fd_ = -1;  // owned
  bool is_block_device_ = false;
  uint64_t region_offset_ = 0;
  uint64_t region_bytes_ = 0;
};

// Fills `bytes` bytes at `buf` with the pseudo-random data blkgen writes,
// a function of `seed` only.
void FillPattern(uint8_t* buf, uint64_t bytes, uint64_t seed);

}  // namespace blkgen

#endif  // BLKGEN_TARGET_H_

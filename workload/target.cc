#include "target.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "io_pattern.h"

namespace blkgen {
namespace {

constexpr uint64_t kLayoutChunk = 1 << 20;  // bytes per write(2) when laying out

// Status for the failed call `what` on `path`, from the current errno.
// Reads errno before anything can change it.
Status OsError(const char* what, const std::string& path) {
  const int err = errno;
  return Status::Errno(std::string(what) + " '" + path + "'", err);
}

}  // namespace

void FillPattern(uint8_t* buf, uint64_t bytes, uint64_t seed) {
  uint64_t state = seed;
  uint64_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    const uint64_t v = SplitMix64(&state);
    std::memcpy(buf + i, &v, 8);
  }
  if (i < bytes) {
    const uint64_t v = SplitMix64(&state);
    std::memcpy(buf + i, &v, bytes - i);
  }
}

Target::~Target() {
  if (fd_ >= 0) close(fd_);
}

Status Target::LayOut(const std::string& path, uint64_t from, uint64_t to, uint64_t fill_seed) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return OsError("laying out", path);
  std::vector<uint8_t> chunk(kLayoutChunk);
  FillPattern(chunk.data(), chunk.size(), fill_seed);
  Status status;
  for (uint64_t pos = from; pos < to && status.ok();) {
    const uint64_t n = std::min<uint64_t>(to - pos, kLayoutChunk);
    ssize_t w = pwrite(fd, chunk.data(), n, static_cast<off_t>(pos));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int err = w < 0 ? errno : EIO;
      status = Status::Errno("laying out '" + path + "'", err);
    } else {
      pos += static_cast<uint64_t>(w);
    }
  }
  if (status.ok() && fsync(fd) != 0) {
    status = OsError("fsync", path);
  }
  close(fd);
  return status;
}

Status Target::Open(const JobSpec& spec, uint64_t fill_seed) {
  const std::string path = spec.EffectiveFilename();
  const uint8_t dirs = InfoFor(spec.rw).dir_mask;
  const bool writes = dirs & (DirBit(Dir::kWrite) | DirBit(Dir::kTrim));
  const bool reads = dirs & DirBit(Dir::kRead);

  struct stat st;
  const bool exists = stat(path.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) return OsError("stat", path);
  if (exists && !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
    return Status::Runtime("'" + path + "' is neither a regular file nor a block device");
  }
  is_block_device_ = exists && S_ISBLK(st.st_mode);

  uint64_t file_bytes = 0;
  if (is_block_device_) {
    int probe = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (probe < 0) return OsError("open", path);
    int ret = ioctl(probe, BLKGETSIZE64, &file_bytes);
    int err = errno;
    close(probe);
    if (ret != 0) return Status::Errno("BLKGETSIZE64 '" + path + "'", err);
  } else if (exists) {
    file_bytes = static_cast<uint64_t>(st.st_size);
  }

  region_offset_ = spec.offset;
  region_bytes_ = spec.size;
  if (region_bytes_ == 0) {
    region_bytes_ = file_bytes > spec.offset ? file_bytes - spec.offset : 0;
    if (region_bytes_ == 0) {
      return Status::Runtime("'" + path + "' has no data at offset " + std::to_string(spec.offset) +
                             " and size= is not set");
    }
  }
  const uint64_t end = region_offset_ + region_bytes_;
  if (end < region_offset_) return Status::Runtime("offset + size overflows");
  if (is_block_device_ && end > file_bytes) {
    return Status::Runtime("device '" + path + "' too small: the job's region ends at byte " +
                           std::to_string(end) + ", the device has " + std::to_string(file_bytes) +
                           " bytes");
  }

  if (!is_block_device_ && end > file_bytes) {
    if (!exists) {
      int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      if (fd < 0) return OsError("create", path);
      close(fd);
    }
    if (reads) {
      Status s = LayOut(path, file_bytes, end, fill_seed);
      if (!s.ok()) return s;
    } else if (truncate(path.c_str(), static_cast<off_t>(end)) != 0) {
      return OsError("extend", path);
    }
  }

  const int flags = (writes ? O_RDWR : O_RDONLY) | O_CLOEXEC | (spec.direct ? O_DIRECT : 0);
  fd_ = open(path.c_str(), flags);
  if (fd_ < 0) return OsError("open", path);

  if (spec.direct && is_block_device_) {
    int logical = 0;
    if (ioctl(fd_, BLKSSZGET, &logical) == 0 && logical > 0) {
      const uint64_t lbs = static_cast<uint64_t>(logical);
      for (int d = 0; d < kNumDirs; ++d) {
        if ((dirs & DirBit(static_cast<Dir>(d))) == 0) continue;
        std::vector<uint64_t> sizes = {spec.bs[d]};
        if (!spec.bssplit[d].empty()) {
          sizes.clear();
          for (const BsSplitEntry& e : spec.bssplit[d]) sizes.push_back(e.bytes);
        }
        sizes.push_back(spec.Alignment(static_cast<Dir>(d)));
        for (uint64_t size : sizes) {
          if (size % lbs != 0) {
            return Status::Runtime("block size or alignment " + std::to_string(size) +
                                   " is not a multiple of the logical block size " +
                                   std::to_string(lbs) + " of '" + path + "' (direct=1)");
          }
        }
      }
      if (region_offset_ % lbs != 0) {
        return Status::Runtime("offset=" + std::to_string(region_offset_) +
                               " is not a multiple of the logical block size " +
                               std::to_string(lbs) + " (direct=1)");
      }
    }
  }
  return Status::Ok();
}

}  // namespace blkgen

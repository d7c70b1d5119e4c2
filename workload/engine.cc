#include "engine.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "io_uring_engine.h"
#include "libaio_engine.h"
#include "psync_engine.h"

namespace blkgen {

std::unique_ptr<Engine> MakeEngine(EngineKind kind) {
  switch (kind) {
    case EngineKind::kPsync:
      return std::make_unique<PsyncEngine>();
    case EngineKind::kIoUring:
      return std::make_unique<IoUringEngine>();
    case EngineKind::kLibaio:
      return std::make_unique<LibaioEngine>();
  }
  return nullptr;
}

int64_t Trim(int fd, bool block_device, uint64_t offset, uint32_t length) {
  int ret;
  if (block_device) {
    uint64_t range[2] = {offset, length};
    ret = ioctl(fd, BLKDISCARD, range);
  } else {
    ret = fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                    static_cast<off_t>(length));
  }
  return ret == 0 ? static_cast<int64_t>(length) : -errno;
}

int64_t PerformSync(int fd, bool block_device, const IoRequest& req) {
  ssize_t n;
  do {
    switch (req.op) {
      case IoOp::kRead:
        n = pread(fd, req.buffer, req.length, static_cast<off_t>(req.offset));
        break;
      case IoOp::kWrite:
        n = pwrite(fd, req.buffer, req.length, static_cast<off_t>(req.offset));
        break;
      case IoOp::kTrim:
        return Trim(fd, block_device, req.offset, req.length);
      case IoOp::kFsync:
        n = fsync(fd);
        break;
      case IoOp::kFdatasync:
        n = fdatasync(fd);
        break;
      default:
        return -EINVAL;
    }
  } while (n < 0 && errno == EINTR);
  return n < 0 ? -errno : n;
}

}  // namespace blkgen

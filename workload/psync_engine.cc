#include "psync_engine.h"

#include <errno.h>
#include <unistd.h>

namespace blkgen {

Status PsyncEngine::Init(int fd, uint32_t depth) {
  if (depth != 1) return Status::Runtime("psync: iodepth must be 1");
  fd_ = fd;
  return Status::Ok();
}

SubmitResult PsyncEngine::Queue(IoRequest* req) {
  ssize_t n;
  do {
    if (req->dir == Dir::kWrite) {
      n = pwrite(fd_, req->buffer, req->length, static_cast<off_t>(req->offset));
    } else {
      n = pread(fd_, req->buffer, req->length, static_cast<off_t>(req->offset));
    }
  } while (n < 0 && errno == EINTR);
  req->result = n < 0 ? -errno : n;
  return SubmitResult::kCompleted;
}

}  // namespace blkgen

#include "io_uring_engine.h"

#include <errno.h>

namespace blkgen {

IoUringEngine::~IoUringEngine() {
  if (ring_ready_) io_uring_queue_exit(&ring_);
}

Status IoUringEngine::Init(int fd, uint32_t depth) {
  static constexpr unsigned kFlagChoices[] = {
      IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN,
      IORING_SETUP_COOP_TASKRUN,
      0,
  };
  int ret = -EINVAL;
  for (unsigned flags : kFlagChoices) {
    ret = io_uring_queue_init(depth, &ring_, flags);
    if (ret == 0) {
      setup_flags_ = flags;
      break;
    }
    if (ret != -EINVAL) break;
  }
  if (ret < 0) return Status::Errno("io_uring_queue_init", -ret);
  ring_ready_ = true;
  ret = io_uring_register_files(&ring_, &fd, 1);
  if (ret < 0) return Status::Errno("io_uring_register_files", -ret);
  return Status::Ok();
}

SubmitResult IoUringEngine::Queue(IoRequest* req) {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) return SubmitResult::kBusy;
  if (req->dir == Dir::kWrite) {
    io_uring_prep_write(sqe, 0, req->buffer, req->length, req->offset);
  } else {
    io_uring_prep_read(sqe, 0, req->buffer, req->length, req->offset);
  }
  sqe->flags |= IOSQE_FIXED_FILE;  // index 0 of the registered files
  io_uring_sqe_set_data(sqe, req);
  return SubmitResult::kQueued;
}

int IoUringEngine::Commit() { return io_uring_submit(&ring_); }

int IoUringEngine::Reap(uint32_t min, uint32_t max, IoRequest** out) {
  io_uring_cqe* cqe = nullptr;
  if (min > 0) {
    int ret = io_uring_wait_cqe_nr(&ring_, &cqe, min);
    if (ret < 0) return ret;
  }
  uint32_t count = 0;
  unsigned head;
  io_uring_for_each_cqe(&ring_, head, cqe) {
    if (count == max) break;
    IoRequest* req = static_cast<IoRequest*>(io_uring_cqe_get_data(cqe));
    req->result = cqe->res;
    out[count++] = req;
  }
  io_uring_cq_advance(&ring_, count);
  return static_cast<int>(count);
}

}  // namespace blkgen

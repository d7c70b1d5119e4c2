#include "io_uring_engine.h"

#include <errno.h>
#include <sys/uio.h>

#include <vector>

namespace blkgen {

IoUringEngine::~IoUringEngine() {
  if (ring_ready_) io_uring_queue_exit(&ring_);
}

Status IoUringEngine::Init(const EngineSetup& setup) {
  static constexpr unsigned kFlagChoices[] = {
      IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN,
      IORING_SETUP_COOP_TASKRUN,
      0,
  };
  fd_ = setup.fd;
  block_device_ = setup.block_device;
  const unsigned extra = setup.sqthread_poll ? IORING_SETUP_SQPOLL : 0;
  int ret = -EINVAL;
  for (unsigned flags : kFlagChoices) {
    ret = io_uring_queue_init(setup.depth, &ring_, flags | extra);
    if (ret == 0) {
      setup_flags_ = flags | extra;
      break;
    }
    if (ret != -EINVAL) break;
  }
  if (ret < 0) {
    return Status::Errno(
        setup.sqthread_poll ? "io_uring_queue_init (sqthread_poll)" : "io_uring_queue_init", -ret);
  }
  ring_ready_ = true;
  int fd = setup.fd;
  ret = io_uring_register_files(&ring_, &fd, 1);
  if (ret < 0) return Status::Errno("io_uring_register_files", -ret);
  if (setup.fixedbufs) {
    std::vector<iovec> iov(setup.requests.size());
    for (size_t i = 0; i < iov.size(); ++i) {
      iov[i].iov_base = setup.requests[i].buffer;
      iov[i].iov_len = setup.buffer_bytes;
    }
    ret = io_uring_register_buffers(&ring_, iov.data(), static_cast<unsigned>(iov.size()));
    if (ret < 0) return Status::Errno("io_uring_register_buffers (fixedbufs)", -ret);
    fixedbufs_ = true;
  }
  return Status::Ok();
}

SubmitResult IoUringEngine::Queue(IoRequest* req) {
  if (req->op == IoOp::kTrim) {
    req->result = Trim(fd_, block_device_, req->offset, req->length);
    return SubmitResult::kCompleted;
  }
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) return SubmitResult::kBusy;
  switch (req->op) {
    case IoOp::kRead:
      if (fixedbufs_) {
        io_uring_prep_read_fixed(sqe, 0, req->buffer, req->length, req->offset,
                                 static_cast<int>(req->index));
      } else {
        io_uring_prep_read(sqe, 0, req->buffer, req->length, req->offset);
      }
      break;
    case IoOp::kWrite:
      if (fixedbufs_) {
        io_uring_prep_write_fixed(sqe, 0, req->buffer, req->length, req->offset,
                                  static_cast<int>(req->index));
      } else {
        io_uring_prep_write(sqe, 0, req->buffer, req->length, req->offset);
      }
      break;
    case IoOp::kFsync:
      io_uring_prep_fsync(sqe, 0, 0);
      break;
    case IoOp::kFdatasync:
      io_uring_prep_fsync(sqe, 0, IORING_FSYNC_DATASYNC);
      break;
    case IoOp::kTrim:
      break;
  }
  sqe->flags |= IOSQE_FIXED_FILE;  // index 0 of the registered files
  io_uring_sqe_set_data(sqe, req);
  return SubmitResult::kQueued;
}

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

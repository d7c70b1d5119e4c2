#include "psync_engine.h"

namespace blkgen {

Status PsyncEngine::Init(const EngineSetup& setup) {
  if (setup.depth != 1) return Status::Runtime("psync: iodepth must be 1");
  fd_ = setup.fd;
  block_device_ = setup.block_device;
  return Status::Ok();
}

}  // namespace blkgen

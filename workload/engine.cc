#include "engine.h"

#include "io_uring_engine.h"
#include "psync_engine.h"

namespace blkgen {

std::unique_ptr<Engine> MakeEngine(EngineKind kind) {
  switch (kind) {
    case EngineKind::kPsync:
      return std::make_unique<PsyncEngine>();
    case EngineKind::kIoUring:
      return std::make_unique<IoUringEngine>();
  }
  return nullptr;
}

}  // namespace blkgen

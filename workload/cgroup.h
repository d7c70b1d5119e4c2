// Per-job cgroup v2 placement and limits. The job's process creates its
// cgroup (mkdir -p below the cgroup root), makes the io controller available
// on the way down (writes "+io" to each parent's cgroup.subtree_control where
// cgroup.controllers offers it and it is not on yet), writes the limits
// (io.weight and io.bfq.weight as "default N", io.max as "MAJ:MIN key=value
// ..." for the job's whole disk) and moves itself in (cgroup.procs), all
// before it opens its file. Errors name the file and carry the kernel's
// errno text. The root is passed in (blkgen's --cgroup-root) so tests can
// use a directory of their own.
// Thread-safety: pure functions over the file system.
#ifndef BLKGEN_CGROUP_H_
#define BLKGEN_CGROUP_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "job_spec.h"
#include "status.h"

namespace blkgen {

struct CgroupSettings {
  std::string root;          // where cgroup v2 is mounted
  std::string name;          // path below it, no leading '/'
  uint32_t io_weight = 0;    // 0 = leave
  uint32_t bfq_weight = 0;   // 0 = leave
  IoMaxLimits io_max;        // empty = leave
  std::string disk_maj_min;  // for io.max; REQUIRES: set when io_max is not empty
};

// Creates the cgroup and writes its limits. *created_levels is the number of
// trailing path components this call created (for RemoveCgroup).
Status SetUpCgroup(const CgroupSettings& settings, int* created_levels);

// Moves process `pid` into the cgroup.
Status JoinCgroup(const std::string& root, const std::string& name, pid_t pid);

// Removes the last `levels` components of `name` (deepest first) if empty.
Status RemoveCgroup(const std::string& root, const std::string& name, int levels);

// The io.max line for `limits` on disk `maj_min`.
std::string IoMaxLine(const std::string& maj_min, const IoMaxLimits& limits);

}  // namespace blkgen

#endif  // BLKGEN_CGROUP_H_

// Which whole disk a file or block device lives on, and that disk's I/O
// counters from sysfs (/sys/block/<disk>/stat), for fio's "disk_util" and
// for cgroup io.max (which takes only whole disks). The sysfs root is passed
// in so tests can use their own.
// Thread-safety: pure functions over the file system.
#ifndef BLKGEN_BLOCK_DEVICE_H_
#define BLKGEN_BLOCK_DEVICE_H_

#include <array>
#include <cstdint>
#include <string>

#include "status.h"

namespace blkgen {

inline constexpr const char* kSysfsRoot = "/sys";

struct DiskId {
  std::string name;     // "nvme0n1", "vda", "loop3"
  std::string maj_min;  // "259:0"
};

// The whole disk holding `path` (a block device: itself or the disk of its
// partition; a regular file, or a path not created yet: the disk of its file
// system). Fails with a message naming the path when there is none (tmpfs,
// overlay, device-mapper without a backing disk in sysfs).
Status WholeDiskOf(const std::string& path, const std::string& sysfs_root, DiskId* disk);

// The fields of /sys/block/<disk>/stat (Documentation/block/stat.rst).
struct DiskStat {
  std::array<uint64_t, 17> field{};  // read_ios, read_merges, read_sectors, read_ticks, ...
};
Status ReadDiskStat(const std::string& sysfs_root, const std::string& disk, DiskStat* stat);

// fio's disk_util entry for one disk between two samples `elapsed_ms` apart.
struct DiskUtil {
  std::string name;
  uint64_t read_ios = 0, write_ios = 0, read_merges = 0, write_merges = 0;
  uint64_t read_ticks = 0, write_ticks = 0, in_queue = 0;  // ms
  double util = 0;  // % of the time the disk had I/O in flight (io_ticks)
};
DiskUtil DiskUtilBetween(const std::string& name, const DiskStat& before, const DiskStat& after,
                         uint64_t elapsed_ms);

}  // namespace blkgen

#endif  // BLKGEN_BLOCK_DEVICE_H_

#include "block_device.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace blkgen {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

Status WholeDiskOf(const std::string& path, const std::string& sysfs_root, DiskId* disk) {
  struct stat st;
  std::string probe = path;
  if (stat(probe.c_str(), &st) != 0) {
    // Not created yet: the directory it will be created in.
    const size_t slash = probe.find_last_of('/');
    probe = slash == std::string::npos ? "." : (slash == 0 ? "/" : probe.substr(0, slash));
    if (stat(probe.c_str(), &st) != 0) return Status::Errno("stat '" + probe + "'", errno);
  }
  const dev_t dev = S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev;
  const std::string mm = std::to_string(major(dev)) + ":" + std::to_string(minor(dev));
  const std::string link = sysfs_root + "/dev/block/" + mm;
  char resolved[PATH_MAX];
  if (major(dev) == 0 || realpath(link.c_str(), resolved) == nullptr) {
    return Status::Runtime("'" + path + "' is on device " + mm +
                           ", which is not a block device in " + sysfs_root + "/dev/block");
  }
  std::string dir = resolved;
  if (Exists(dir + "/partition")) dir = dir.substr(0, dir.find_last_of('/'));
  disk->name = dir.substr(dir.find_last_of('/') + 1);
  disk->maj_min = ReadFirstLine(dir + "/dev");
  if (disk->maj_min.empty()) return Status::Runtime("cannot read " + dir + "/dev");
  return Status::Ok();
}

Status ReadDiskStat(const std::string& sysfs_root, const std::string& disk, DiskStat* stat) {
  const std::string path = sysfs_root + "/block/" + disk + "/stat";
  std::ifstream in(path);
  if (!in) return Status::Errno("open '" + path + "'", errno ? errno : ENOENT);
  DiskStat s;
  for (uint64_t& f : s.field) {
    if (!(in >> f)) break;  // older kernels have fewer fields
  }
  *stat = s;
  return Status::Ok();
}

DiskUtil DiskUtilBetween(const std::string& name, const DiskStat& before, const DiskStat& after,
                         uint64_t elapsed_ms) {
  auto delta = [&](int i) {
    return after.field[i] >= before.field[i] ? after.field[i] - before.field[i] : 0;
  };
  DiskUtil u;
  u.name = name;
  u.read_ios = delta(0);
  u.read_merges = delta(1);
  u.read_ticks = delta(3);
  u.write_ios = delta(4);
  u.write_merges = delta(5);
  u.write_ticks = delta(7);
  u.in_queue = delta(10);
  if (elapsed_ms > 0) {
    u.util = 100.0 * static_cast<double>(delta(9)) / static_cast<double>(elapsed_ms);
    if (u.util > 100.0) u.util = 100.0;  // as fio
  }
  return u;
}

}  // namespace blkgen

#include "cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <vector>

namespace blkgen {
namespace {

std::vector<std::string> Components(const std::string& name) {
  std::vector<std::string> parts;
  std::stringstream ss(name);
  std::string part;
  while (std::getline(ss, part, '/')) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

Status WriteControl(const std::string& path, const std::string& text) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Status::Errno("cgroup: open '" + path + "'", errno);
  ssize_t n;
  do {
    n = write(fd, text.data(), text.size());
  } while (n < 0 && errno == EINTR);
  const int err = errno;
  close(fd);
  if (n < 0) return Status::Errno("cgroup: write '" + text + "' to '" + path + "'", err);
  return Status::Ok();
}

bool ReadWords(const std::string& path, std::vector<std::string>* words, int* err) {
  std::ifstream in(path);
  if (!in) {
    *err = errno ? errno : ENOENT;
    return false;
  }
  std::string w;
  while (in >> w) words->push_back(w);
  return true;
}

bool Has(const std::vector<std::string>& words, const std::string& w) {
  for (const std::string& x : words) {
    if (x == w) return true;
  }
  return false;
}

// Makes the io controller available to the children of `dir`.
Status EnableIo(const std::string& dir) {
  std::vector<std::string> available, enabled;
  int err = 0;
  const std::string controllers = dir + "/cgroup.controllers";
  if (!ReadWords(controllers, &available, &err)) {
    return Status::Errno("cgroup: read '" + controllers + "' (is cgroup v2 mounted there?)", err);
  }
  if (!Has(available, "io")) {
    return Status::Runtime("cgroup: no io controller in '" + controllers + "' (it lists: " + [&] {
      std::string all;
      for (const std::string& w : available) all += (all.empty() ? "" : " ") + w;
      return all.empty() ? std::string("nothing") : all;
    }() + ")");
  }
  const std::string subtree = dir + "/cgroup.subtree_control";
  if (!ReadWords(subtree, &enabled, &err)) {
    return Status::Errno("cgroup: read '" + subtree + "'", err);
  }
  if (Has(enabled, "io")) return Status::Ok();
  return WriteControl(subtree, "+io");
}

}  // namespace

std::string IoMaxLine(const std::string& maj_min, const IoMaxLimits& limits) {
  std::string line = maj_min;
  if (limits.rbps) line += " rbps=" + std::to_string(limits.rbps);
  if (limits.wbps) line += " wbps=" + std::to_string(limits.wbps);
  if (limits.riops) line += " riops=" + std::to_string(limits.riops);
  if (limits.wiops) line += " wiops=" + std::to_string(limits.wiops);
  return line;
}

Status SetUpCgroup(const CgroupSettings& settings, int* created_levels) {
  *created_levels = 0;
  const std::vector<std::string> parts = Components(settings.name);
  if (parts.empty()) return Status::Runtime("cgroup: empty name");
  std::string dir = settings.root;
  for (size_t i = 0; i < parts.size(); ++i) {
    Status s = EnableIo(dir);
    if (!s.ok()) return s;
    dir += "/" + parts[i];
    if (mkdir(dir.c_str(), 0755) == 0) {
      // Below a created level everything is created too.
      if (*created_levels == 0) *created_levels = static_cast<int>(parts.size() - i);
    } else if (errno != EEXIST) {
      return Status::Errno("cgroup: mkdir '" + dir + "'", errno);
    }
  }
  if (settings.io_weight != 0) {
    Status s = WriteControl(dir + "/io.weight", "default " + std::to_string(settings.io_weight));
    if (!s.ok()) return s;
  }
  if (settings.bfq_weight != 0) {
    Status s =
        WriteControl(dir + "/io.bfq.weight", "default " + std::to_string(settings.bfq_weight));
    if (!s.ok()) {
      return Status::Runtime(
          s.message() + " (bfq must be the scheduler of a disk for io.bfq.weight)",
          s.error_number());
    }
  }
  if (!settings.io_max.empty()) {
    Status s = WriteControl(dir + "/io.max", IoMaxLine(settings.disk_maj_min, settings.io_max));
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Status JoinCgroup(const std::string& root, const std::string& name, pid_t pid) {
  return WriteControl(root + "/" + name + "/cgroup.procs", std::to_string(pid));
}

Status RemoveCgroup(const std::string& root, const std::string& name, int levels) {
  std::vector<std::string> parts = Components(name);
  for (int i = 0; i < levels && !parts.empty(); ++i) {
    std::string dir = root;
    for (const std::string& p : parts) dir += "/" + p;
    if (rmdir(dir.c_str()) != 0) return Status::Errno("cgroup: rmdir '" + dir + "'", errno);
    parts.pop_back();
  }
  return Status::Ok();
}

}  // namespace blkgen

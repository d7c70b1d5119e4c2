#include "state_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

#include "checksum.h"
#include "devmodel_source_hash.h"

namespace devmodel::internal {
namespace {

// File layout (host byte order): a 64-byte header, then the key (padded to
// 8 bytes), the FTL metadata (Ftl::SaveState, whole words), the L2P
// entries (4 bytes each, padded to 8).
constexpr char kMagic[8] = {'D', 'M', 'F', 'T', 'L', 'S', 'T', '\0'};
constexpr std::uint32_t kByteOrderMark = 0x01020304u;
constexpr std::size_t kHeaderBytes = 64;

struct Header {
  char magic[8];
  std::uint32_t version;
  std::uint32_t byte_order;
  std::uint64_t key_bytes;
  std::uint64_t meta_bytes;
  std::uint64_t l2p_entries;
  std::uint64_t body_checksum;  // of everything after the header
  std::uint64_t header_checksum;  // of the 48 bytes before it
  std::uint64_t zero;
};
static_assert(sizeof(Header) == kHeaderBytes);

std::uint64_t Pad8(std::uint64_t n) { return (n + 7) / 8 * 8; }

std::uint64_t HeaderChecksum(const Header& h) {
  Checksum c;
  c.Add(&h, offsetof(Header, header_checksum));
  return c.Value();
}

std::string Hex(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Writes all of `bytes` or fails.
bool WriteAll(int fd, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<std::size_t>(n);
  }
  return true;
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Removes the least recently used state files (mtime; a load touches its
// file) past kStateCacheMaxFiles or kStateCacheMaxBytes, never `keep`, and
// temporary files a writer left over an hour ago (a writer that died).
void Prune(const std::string& dir, const std::string& keep) {
  namespace fs = std::filesystem;
  struct Entry {
    fs::file_time_type mtime;
    std::string path;
    std::uint64_t bytes;
  };
  std::vector<Entry> files;
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("ftl-", 0) != 0) continue;
    std::error_code ec2;
    const auto mtime = fs::last_write_time(e.path(), ec2);
    if (ec2) continue;
    if (name.find(".tmp.") != std::string::npos) {
      if (now - mtime > std::chrono::hours(1)) fs::remove(e.path(), ec2);
      continue;
    }
    if (name.size() < 6 || name.substr(name.size() - 6) != ".state") continue;
    const std::uint64_t bytes = fs::file_size(e.path(), ec2);
    if (ec2) continue;
    files.push_back({mtime, e.path().string(), bytes});
  }
  std::sort(files.begin(), files.end(), [&keep](const Entry& a, const Entry& b) {
    if ((a.path == keep) != (b.path == keep)) return a.path == keep;
    if (a.mtime != b.mtime) return a.mtime > b.mtime;
    return a.path < b.path;
  });
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    total += files[i].bytes;
    if (i == 0) continue;  // `keep`, or the newest
    if (static_cast<int>(i) >= kStateCacheMaxFiles || total > kStateCacheMaxBytes) {
      std::error_code ec2;
      fs::remove(files[i].path, ec2);
    }
  }
}

}  // namespace

const char* DevmodelSourceHash() { return DEVMODEL_SOURCE_HASH; }

std::string FtlStateKey(const std::string& config_text, std::uint64_t seed) {
  return "devmodel FTL state\nformat " + std::to_string(kStateFormatVersion) + "\nsource " +
         DevmodelSourceHash() + "\nseed " + std::to_string(seed) + "\n[ssd]\n" + config_text;
}

std::string FtlStatePath(const std::string& dir, const std::string& key) {
  std::string padded = key;
  padded.resize(Pad8(padded.size()), '\0');
  Checksum c;
  c.Add(padded.data(), padded.size());
  return (std::filesystem::path(dir) / ("ftl-" + Hex(c.Value()) + ".state")).string();
}

bool LoadFtlState(const std::string& dir, const std::string& key, Ftl* ftl, std::string* note) {
  note->clear();
  const std::string path = FtlStatePath(dir, key);
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno != ENOENT) *note = path + ": " + std::strerror(errno);
    return false;
  }
  auto bad = [&](const std::string& why) {
    *note = path + ": " + why;
    return false;
  };
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return bad(std::strerror(errno));
  const auto size = static_cast<std::uint64_t>(st.st_size);
  Header h;
  if (size < kHeaderBytes || ::pread(fd.get(), &h, kHeaderBytes, 0) != kHeaderBytes) {
    return bad("truncated header");
  }
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) return bad("not a state file (magic)");
  if (h.byte_order != kByteOrderMark) return bad("written on a host of another byte order");
  if (h.version != kStateFormatVersion) {
    return bad("format " + std::to_string(h.version) + ", this library reads " +
               std::to_string(kStateFormatVersion));
  }
  if (HeaderChecksum(h) != h.header_checksum) return bad("header checksum mismatch");
  const std::uint64_t n = ftl->geometry().exported_slots;
  if (h.key_bytes != key.size() || h.l2p_entries != n || h.meta_bytes % 8 != 0 ||
      h.meta_bytes > size) {
    return bad("key or table size differs from this drive's");
  }
  const std::uint64_t expect =
      kHeaderBytes + Pad8(h.key_bytes) + h.meta_bytes + Pad8(n * sizeof(std::uint32_t));
  if (size != expect) {
    return bad("size " + std::to_string(size) + " bytes, expected " + std::to_string(expect));
  }
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (map == MAP_FAILED) return bad(std::string("mmap: ") + std::strerror(errno));
  struct Unmap {
    void* p;
    std::size_t n;
    ~Unmap() { ::munmap(p, n); }
  } unmap{map, size};
  ::madvise(map, size, MADV_SEQUENTIAL);
  const char* base = static_cast<const char*>(map);
  const char* key_at = base + kHeaderBytes;
  if (std::memcmp(key_at, key.data(), key.size()) != 0) return bad("another drive's key");
  Checksum c;
  c.Add(key_at, size - kHeaderBytes);
  if (c.Value() != h.body_checksum) return bad("checksum mismatch");
  const char* meta = key_at + Pad8(h.key_bytes);
  const auto* l2p = reinterpret_cast<const std::uint32_t*>(meta + h.meta_bytes);
  std::string why;
  if (!ftl->LoadState(meta, h.meta_bytes, l2p, &why)) return bad(why);
  ::futimens(fd.get(), nullptr);  // most recently used (pruning)
  return true;
}

bool SaveFtlState(const std::string& dir, const std::string& key, const Ftl& ftl,
                  std::string* note) {
  note->clear();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    *note = dir + ": " + ec.message();
    return false;
  }
  const std::string path = FtlStatePath(dir, key);
  static std::atomic<std::uint64_t> serial{0};
  const std::string tmp =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(serial++);
  const Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) {
    *note = tmp + ": " + std::strerror(errno);
    return false;
  }
  auto fail = [&](const std::string& why) {
    *note = tmp + ": " + why;
    ::unlink(tmp.c_str());
    return false;
  };
  std::string key_padded = key;
  key_padded.resize(Pad8(key.size()), '\0');
  std::string meta;
  ftl.SaveState(&meta);
  const SparseMap& l2p = ftl.l2p();
  const std::uint64_t n = l2p.size();
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kStateFormatVersion;
  h.byte_order = kByteOrderMark;
  h.key_bytes = key.size();
  h.meta_bytes = meta.size();
  h.l2p_entries = n;
  Checksum c;
  if (!WriteAll(fd.get(), &h, kHeaderBytes)) return fail(std::strerror(errno));
  c.Add(key_padded.data(), key_padded.size());
  c.Add(meta.data(), meta.size());
  if (!WriteAll(fd.get(), key_padded.data(), key_padded.size()) ||
      !WriteAll(fd.get(), meta.data(), meta.size())) {
    return fail(std::strerror(errno));
  }
  // The L2P a region at a time, through a buffer of whole words.
  std::vector<std::uint32_t> buf;
  constexpr std::uint64_t kBufEntries = std::uint64_t{1} << 20;
  buf.reserve(kBufEntries + 1);
  for (std::uint64_t r = 0; r < l2p.regions(); ++r) {
    const std::uint64_t first = r << SparseMap::kRegionShift;
    const std::uint64_t count = std::min(SparseMap::kRegionSize, n - first);
    const std::uint32_t* region = l2p.DenseRegion(r);
    buf.insert(buf.end(), region, region + count);
    const bool last = r + 1 == l2p.regions();
    if (buf.size() >= kBufEntries || last) {
      if (last && buf.size() % 2 != 0) buf.push_back(0);  // pad to a word
      const std::size_t whole = buf.size() / 2 * 2;
      c.Add(buf.data(), whole * sizeof(std::uint32_t));
      if (!WriteAll(fd.get(), buf.data(), whole * sizeof(std::uint32_t))) {
        return fail(std::strerror(errno));
      }
      buf.erase(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(whole));
    }
  }
  h.body_checksum = c.Value();
  h.header_checksum = HeaderChecksum(h);
  if (::pwrite(fd.get(), &h, kHeaderBytes, 0) != kHeaderBytes) return fail(std::strerror(errno));
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail(std::strerror(errno));
  Prune(dir, path);
  return true;
}

}  // namespace devmodel::internal

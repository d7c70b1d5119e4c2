#include "replay.h"

#include <dirent.h>
#include <errno.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include "units.h"

namespace blkgen {
namespace {

constexpr std::string_view kIologV2 = "fio version 2 iolog";
constexpr std::string_view kIologV3 = "fio version 3 iolog";
constexpr uint64_t kNsPerUs = 1000;

// blktrace (include/uapi/linux/blktrace_api.h).
constexpr uint32_t kBlktraceMagic = 0x65617400;
constexpr uint32_t kBlktraceVersion = 0x07;
constexpr size_t kBlktraceRecordBytes = 48;
constexpr uint32_t kTcShift = 16;
constexpr uint32_t kTcWrite = 1u << 1;
constexpr uint32_t kTcFlush = 1u << 2;
constexpr uint32_t kTcNotify = 1u << 10;
constexpr uint32_t kTcDiscard = 1u << 13;
constexpr uint32_t kTaQueue = 1;
constexpr uint64_t kSectorBytes = 512;

std::string At(const std::string& name, uint64_t byte) {
  return name + ": byte offset " + std::to_string(byte) + ": ";
}

// Applies replay_scale and replay_align to an offset (fio's order).
uint64_t MapOffset(uint64_t offset, const ReplaySettings& s) {
  if (s.scale > 1) offset /= s.scale;
  if (s.align != 0) offset &= ~(s.align - 1);
  return offset;
}

uint64_t ScaleTime(uint64_t ns, const ReplaySettings& s) {
  if (s.no_stall) return 0;
  if (s.time_scale == 100) return ns;
  return static_cast<uint64_t>(static_cast<unsigned __int128>(ns) * 100 / s.time_scale);
}

void Add(ReplayTrace* t, const ReplayIo& io) {
  if (IsData(io.op)) {
    t->dirs |= DirBit(static_cast<Dir>(io.op));
    t->max_length = std::max(t->max_length, io.length);
    t->end_offset = std::max(t->end_offset, io.offset + io.length);
  }
  t->ios.push_back(io);
}

bool ParseU64(std::string_view s, uint64_t* v) {
  if (s.empty() || s.size() > 20) return false;
  unsigned __int128 x = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    x = x * 10 + static_cast<unsigned>(c - '0');
  }
  if (x > UINT64_MAX) return false;
  *v = static_cast<uint64_t>(x);
  return true;
}

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> f;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i == line.size()) break;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    f.push_back(line.substr(i, j - i));
    i = j;
  }
  return f;
}

bool DataAction(std::string_view a, IoOp* op) {
  if (a == "read") *op = IoOp::kRead;
  else if (a == "write") *op = IoOp::kWrite;
  else if (a == "trim") *op = IoOp::kTrim;
  else if (a == "sync") *op = IoOp::kFsync;
  else if (a == "datasync") *op = IoOp::kFdatasync;
  else return false;
  return true;
}

uint32_t Swap32(uint32_t v) { return __builtin_bswap32(v); }

uint32_t Load32(const char* p, bool swap) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return swap ? Swap32(v) : v;
}
uint64_t Load64(const char* p, bool swap) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return swap ? __builtin_bswap64(v) : v;
}
uint16_t Load16(const char* p, bool swap) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return swap ? __builtin_bswap16(v) : v;
}

bool MagicMatches(uint32_t magic) { return (magic & 0xffffff00u) == kBlktraceMagic; }

// One queue event, before mapping.
struct RawEvent {
  uint64_t time_ns;
  uint64_t sector;
  uint32_t bytes;
  uint32_t action;
  uint32_t file;  // index in the file list (tie-break)
  uint64_t seq;   // record index in its file (tie-break)
};

// The byte order of a blktrace file from its first record; false if the
// first four bytes are no blktrace magic in either order.
bool DetectOrder(std::string_view bytes, bool* swap) {
  if (bytes.size() < 4) return false;
  const uint32_t m = Load32(bytes.data(), false);
  if (MagicMatches(m)) {
    *swap = false;
    return true;
  }
  if (MagicMatches(Swap32(m))) {
    *swap = true;
    return true;
  }
  return false;
}

Status ReadEvents(const std::string& name, std::string_view bytes, uint32_t file_index,
                  bool* swapped, std::vector<RawEvent>* events) {
  bool swap = false;
  if (bytes.empty()) return Status::Usage(name + ": empty file, not a blktrace");
  if (!DetectOrder(bytes, &swap)) {
    char magic[16];
    std::snprintf(magic, sizeof(magic), "0x%08x", Load32(bytes.data(), false));
    return Status::Usage(At(name, 0) + "no blktrace magic (0x65617400 | version) in either byte "
                         "order: found " + std::string(bytes.size() >= 4 ? magic : "a short file"));
  }
  *swapped = swap;
  uint64_t seq = 0;
  size_t pos = 0;
  while (pos < bytes.size()) {
    if (bytes.size() - pos < kBlktraceRecordBytes) {
      return Status::Usage(At(name, pos) + "truncated record: " +
                           std::to_string(bytes.size() - pos) + " bytes left, a record needs " +
                           std::to_string(kBlktraceRecordBytes));
    }
    const char* r = bytes.data() + pos;
    const uint32_t magic = Load32(r, swap);
    if (!MagicMatches(magic)) {
      if (MagicMatches(Swap32(magic))) {
        return Status::Usage(At(name, pos) + "record in the other byte order than the file's " +
                             "first (" + (swap ? "big" : "little") + "-endian); mixed files " +
                             "cannot be replayed");
      }
      return Status::Usage(At(name, pos) + "bad blktrace magic (record misaligned or corrupt)");
    }
    if ((magic & 0xff) != kBlktraceVersion) {
      return Status::Usage(At(name, pos) + "blktrace version " + std::to_string(magic & 0xff) +
                           ", only version 7 is supported");
    }
    const uint16_t pdu_len = Load16(r + 46, swap);
    if (bytes.size() - pos - kBlktraceRecordBytes < pdu_len) {
      return Status::Usage(At(name, pos) + "truncated record: payload of " +
                           std::to_string(pdu_len) + " bytes runs past the end of the file");
    }
    const uint32_t action = Load32(r + 28, swap);
    const bool notify = (action & (kTcNotify << kTcShift)) != 0;
    if ((action & 0xffff) == kTaQueue && !notify) {
      events->push_back(RawEvent{Load64(r + 8, swap), Load64(r + 16, swap), Load32(r + 24, swap),
                                 action, file_index, seq});
    }
    ++seq;
    pos += kBlktraceRecordBytes + pdu_len;
  }
  return Status::Ok();
}

bool EndsWithCpuSuffix(const std::string& path, std::string* prefix) {
  static constexpr std::string_view kMark = ".blktrace.";
  const size_t at = path.rfind(kMark);
  if (at == std::string::npos) return false;
  const std::string tail = path.substr(at + kMark.size());
  if (tail.empty() || tail.find_first_not_of("0123456789") != std::string::npos) return false;
  *prefix = path.substr(0, at + kMark.size());
  return true;
}

Status ReadWholeFile(const std::string& path, std::string* bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Usage("read_iolog: cannot open '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::Usage("read_iolog: cannot read '" + path + "'");
  *bytes = ss.str();
  return Status::Ok();
}

Status ListDir(const std::string& dir, std::vector<std::string>* names) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    return Status::Usage("read_iolog: cannot list '" + dir + "': " + std::strerror(errno));
  }
  while (dirent* e = readdir(d)) names->emplace_back(e->d_name);
  closedir(d);
  return Status::Ok();
}

}  // namespace

Status ParseIolog(const std::string& name, std::string_view text, const ReplaySettings& settings,
                  ReplayTrace* out) {
  ReplayTrace t;
  const size_t first_end = text.find('\n');
  std::string_view header = text.substr(0, first_end);
  if (!header.empty() && header.back() == '\r') header.remove_suffix(1);
  int version;
  if (header == kIologV2) {
    version = 2;
  } else if (header == kIologV3) {
    version = 3;
  } else {
    return Status::Usage(At(name, 0) + "line 1: not a fio iolog (\"" + std::string(kIologV2) +
                         "\" or \"" + std::string(kIologV3) + "\") nor a blktrace");
  }
  t.format = version == 2 ? "fio iolog v2" : "fio iolog v3";
  uint64_t origin_us = 0, last_us = 0;
  bool have_origin = false;
  uint64_t waited_ns = 0;  // v2: sum of `wait`s
  size_t pos = first_end == std::string_view::npos ? text.size() : first_end + 1;
  uint64_t line_no = 1;
  while (pos < text.size()) {
    ++line_no;
    const size_t line_start = pos;
    size_t end = text.find('\n', pos);
    const bool last = end == std::string_view::npos;
    if (last) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    auto bad = [&](const std::string& why) {
      return Status::Usage(At(name, line_start) + "line " + std::to_string(line_no) + ": " + why);
    };
    if (line.find('\0') != std::string_view::npos) return bad("NUL byte in a text iolog");
    const std::vector<std::string_view> f = Fields(line);
    if (f.empty()) continue;
    size_t k = 0;
    uint64_t due_ns = waited_ns;
    if (version == 3) {
      uint64_t us;
      if (!ParseU64(f[0], &us)) {
        return bad("'" + std::string(f[0]) + "' is not a timestamp (microseconds, an integer)");
      }
      if (have_origin && us < last_us) {
        return bad("timestamp " + std::to_string(us) + " goes back in time (previous " +
                   std::to_string(last_us) + ")");
      }
      if (!have_origin) {
        origin_us = us;
        have_origin = true;
      }
      last_us = us;
      due_ns = ScaleTime((us - origin_us) * kNsPerUs, settings);
      k = 1;
    }
    if (f.size() - k < 2) return bad("expected '" + std::string(version == 3 ? "time " : "") +
                                     "filename action [offset length]'");
    const std::string_view action = f[k + 1];
    if (action == "add" || action == "open" || action == "close") {
      if (f.size() - k != 2) return bad("'" + std::string(action) + "' takes no offset or length");
      continue;
    }
    if (action == "wait") {
      if (version == 3) return bad("'wait' is not allowed in version 3 (use timestamps)");
      uint64_t us;
      if (f.size() - k != 4 || !ParseU64(f[k + 2], &us)) {
        return bad("expected 'filename wait microseconds 0'");
      }
      if (!settings.no_stall) waited_ns += us * kNsPerUs;
      continue;
    }
    IoOp op;
    if (!DataAction(action, &op)) {
      return bad("unknown action '" + std::string(action) +
                 "' (add, open, close, read, write, trim, sync, datasync" +
                 (version == 2 ? ", wait)" : ")"));
    }
    uint64_t offset = 0, length = 0;
    if (f.size() - k != 4 || !ParseU64(f[k + 2], &offset) || !ParseU64(f[k + 3], &length)) {
      return bad("expected '" + std::string(action) + " offset length' in bytes");
    }
    if (IsData(op) && (length == 0 || length > (1u << 30))) {
      return bad("length " + std::to_string(length) + " must be 1..1g");
    }
    ReplayIo io;
    io.due_ns = due_ns;
    io.op = op;
    if (IsData(op)) {
      io.offset = MapOffset(offset, settings);
      io.length = static_cast<uint32_t>(length);
    }
    Add(&t, io);
    if (last) break;
  }
  if (t.ios.empty()) return Status::Usage(name + ": the iolog holds no I/O to replay");
  *out = std::move(t);
  return Status::Ok();
}

bool LooksLikeBlktrace(std::string_view bytes) {
  bool swap;
  return DetectOrder(bytes, &swap);
}

Status ParseBlktrace(const std::vector<std::pair<std::string, std::string>>& files,
                     const ReplaySettings& settings, ReplayTrace* out) {
  std::vector<RawEvent> events;
  bool any_swapped = false;
  for (size_t i = 0; i < files.size(); ++i) {
    bool swapped = false;
    Status s = ReadEvents(files[i].first, files[i].second, static_cast<uint32_t>(i), &swapped,
                          &events);
    if (!s.ok()) return s;
    if (i > 0 && swapped != any_swapped) {
      return Status::Usage(files[i].first + ": byte order differs from " + files[0].first);
    }
    any_swapped = swapped;
  }
  // A per-CPU file is in time order; a merge of several is sorted here.
  std::stable_sort(events.begin(), events.end(), [](const RawEvent& a, const RawEvent& b) {
    if (a.time_ns != b.time_ns) return a.time_ns < b.time_ns;
    if (a.file != b.file) return a.file < b.file;
    return a.seq < b.seq;
  });
  ReplayTrace t;
  t.big_endian = any_swapped;
  t.format = files.size() == 1 ? "blktrace"
                               : "blktrace (" + std::to_string(files.size()) + " per-CPU files)";
  const uint64_t origin = events.empty() ? 0 : events.front().time_ns;
  for (const RawEvent& e : events) {
    ReplayIo io;
    io.due_ns = ScaleTime(e.time_ns - origin, settings);
    const uint32_t cat = e.action >> kTcShift;
    uint64_t bytes = e.bytes;
    if (settings.align != 0) bytes = (bytes + settings.align - 1) & ~(settings.align - 1);
    if ((cat & kTcDiscard) != 0) {
      io.op = IoOp::kTrim;
    } else if ((cat & kTcFlush) != 0) {
      io.op = IoOp::kFsync;
    } else {
      if (bytes == 0) continue;  // as fio: nothing to replay
      io.op = (cat & kTcWrite) != 0 ? IoOp::kWrite : IoOp::kRead;
    }
    if (IsData(io.op)) {
      if (bytes == 0 || bytes > (1u << 30)) continue;
      io.offset = MapOffset(e.sector * kSectorBytes, settings);
      io.length = static_cast<uint32_t>(bytes);
    }
    Add(&t, io);
  }
  if (t.ios.empty()) {
    return Status::Usage(files[0].first + ": the blktrace holds no queue (Q) event to replay");
  }
  *out = std::move(t);
  return Status::Ok();
}

Status LoadReplayTrace(const std::string& path, const ReplaySettings& settings,
                       const ReplayFileReader& read, const ReplayDirLister& list,
                       ReplayTrace* out) {
  std::string bytes;
  Status s = read(path, &bytes);
  if (!s.ok()) return s;
  if (bytes.empty()) return Status::Usage(path + ": is empty, no trace to replay");
  if (!LooksLikeBlktrace(bytes)) return ParseIolog(path, bytes, settings, out);
  std::vector<std::pair<std::string, std::string>> files;
  std::string prefix;
  if (!EndsWithCpuSuffix(path, &prefix)) {
    files.emplace_back(path, std::move(bytes));
    return ParseBlktrace(files, settings, out);
  }
  const size_t slash = prefix.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : prefix.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? prefix : prefix.substr(slash + 1);
  std::vector<std::string> names;
  s = list(dir, &names);
  if (!s.ok()) return s;
  std::vector<std::pair<uint64_t, std::string>> cpus;
  for (const std::string& n : names) {
    std::string p;
    if (n.compare(0, base.size(), base) != 0 || !EndsWithCpuSuffix(n, &p) || p != base) continue;
    uint64_t cpu;
    if (!ParseU64(std::string_view(n).substr(base.size()), &cpu)) continue;
    cpus.emplace_back(cpu, (slash == std::string::npos ? "" : dir) + n);
  }
  std::sort(cpus.begin(), cpus.end());
  for (const auto& [cpu, p] : cpus) {
    std::string b;
    if (p == path) {
      b = bytes;
    } else {
      s = read(p, &b);
      if (!s.ok()) return s;
    }
    if (b.empty()) continue;  // a CPU that saw no I/O
    files.emplace_back(p, std::move(b));
  }
  return ParseBlktrace(files, settings, out);
}

Status LoadReplays(std::vector<JobSpec>* jobs, std::vector<std::string>* notes) {
  for (JobSpec& job : *jobs) {
    if (job.read_iolog.empty()) continue;
    auto usage = [&](const std::string& m) {
      return Status::Usage("job '" + job.name + "': read_iolog=" + job.read_iolog + ": " + m);
    };
    if (job.verify != VerifyKind::kNone || job.verify_only) {
      return usage("verify cannot check a replayed trace");
    }
    if (job.time_based) return usage("time_based is not supported with a replay (it ends with the trace)");
    if (job.rate[0] || job.rate[1] || job.rate[2] || job.rate_iops[0] || job.rate_iops[1] ||
        job.rate_iops[2] || job.thinktime_ns != 0) {
      return usage("rate, rate_iops and thinktime are not supported with a replay (the trace sets "
                   "the timing; replay_time_scale scales it)");
    }
    ReplaySettings rs;
    rs.time_scale = job.replay_time_scale;
    rs.no_stall = job.replay_no_stall;
    rs.align = job.replay_align;
    rs.scale = job.replay_scale;
    auto trace = std::make_shared<ReplayTrace>();
    Status s = LoadReplayTrace(job.read_iolog, rs, ReadWholeFile, ListDir, trace.get());
    if (!s.ok()) return Status::Usage("job '" + job.name + "': read_iolog: " + s.message());
    if (trace->big_endian) {
      notes->push_back("job '" + job.name + "': " + job.read_iolog +
                       " was recorded big-endian; its records are byte-swapped (as fio)");
    }
    job.replay_dirs = trace->dirs;
    const bool writes = (trace->dirs & (DirBit(Dir::kWrite) | DirBit(Dir::kTrim))) != 0;
    const bool reads = (trace->dirs & DirBit(Dir::kRead)) != 0;
    job.rw = writes ? (reads ? RwMode::kReadWrite : RwMode::kWrite) : RwMode::kRead;
    if (job.replay_dirs == 0) job.replay_dirs = DirBit(Dir::kRead);  // syncs only
    for (int d = 0; d < kNumDirs; ++d) {
      job.bs[d] = std::max<uint64_t>(trace->max_length, 512);
      job.bssplit[d].clear();
    }
    job.replay = std::move(trace);
  }
  return Status::Ok();
}

Status ApplyReadIolog(std::string_view v, JobSpec* job) {
  if (v.empty()) return Status::Usage("file name must not be empty");
  if (v.find(':') != std::string_view::npos) {
    return Status::Usage("several traces (':') are not supported; merge them with blkparse -d");
  }
  job->read_iolog = std::string(v);
  return Status::Ok();
}

Status ApplyReplayTimeScale(std::string_view v, JobSpec* job) {
  uint64_t n;
  Status s = ParseUint(v, &n);
  if (!s.ok()) return s;
  if (n < 1 || n > 100000) return Status::Usage("must be 1..100000 (%, 100 = as recorded)");
  job->replay_time_scale = static_cast<uint32_t>(n);
  return Status::Ok();
}

Status ApplyReplayNoStall(std::string_view v, JobSpec* job) {
  return ParseBool(v, &job->replay_no_stall);
}

Status ApplyReplayRedirect(std::string_view v, JobSpec* job) {
  if (v.empty()) return Status::Usage("file name must not be empty");
  job->replay_redirect = std::string(v);
  return Status::Ok();
}

Status ApplyReplayAlign(std::string_view v, JobSpec* job) {
  uint64_t n;
  Status s = ParseSize(v, &n);
  if (!s.ok()) return s;
  if (n != 0 && (n & (n - 1)) != 0) return Status::Usage("must be a power of two (bytes) or 0");
  job->replay_align = n;
  return Status::Ok();
}

Status ApplyReplayScale(std::string_view v, JobSpec* job) {
  uint64_t n;
  Status s = ParseUint(v, &n);
  if (!s.ok()) return s;
  job->replay_scale = n;
  return Status::Ok();
}

}  // namespace blkgen

#include "devmodel/profile.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <toml.hpp>
#include <vector>

#include "devmodel/cloud.h"
#include "devmodel/faults.h"
#include "devmodel/hdd.h"
#include "devmodel/ssd.h"
#include "devmodel/zero.h"

namespace devmodel {
namespace {

// One accepted key: its type, allowed range (in the key's own unit), the
// factor to the config field's unit, and how to store it.
struct Key {
  enum class Type { kInt, kNumber, kBool, kChoice, kNumberList };
  const char* name = "";
  Type type = Type::kInt;
  double lo = 0, hi = 0;
  const char* unit = "";
  std::vector<std::string> choices;  // kChoice
  std::function<void(void*, std::int64_t)> set_int;
  std::function<void(void*, double)> set_number;  // also each list element
  std::function<void(void*, bool)> set_bool;
  std::function<void(void*, const std::string&)> set_choice;
  std::function<void(void*, const std::vector<double>&)> set_list;
  // The config field's value in the key's unit (for the default a
  // default-constructed config holds); empty for text and list keys.
  std::function<double(const void*)> get_number;
};

Key MakeKey(const char* name, Key::Type type, double lo = 0, double hi = 0, const char* unit = "") {
  Key k;
  k.name = name;
  k.type = type;
  k.lo = lo;
  k.hi = hi;
  k.unit = unit;
  return k;
}

template <class C, class M>
Key Int(const char* name, M C::*field, double lo, double hi, const char* unit) {
  Key k = MakeKey(name, Key::Type::kInt, lo, hi, unit);
  k.set_int = [field](void* c, std::int64_t v) { static_cast<C*>(c)->*field = static_cast<M>(v); };
  k.get_number = [field](const void* c) {
    return static_cast<double>(static_cast<const C*>(c)->*field);
  };
  return k;
}

// A number in the key's unit, stored as an integer after multiplying by `scale`
// (e.g. microseconds in the file, nanoseconds in the config).
template <class C, class M>
Key Scaled(const char* name, M C::*field, double lo, double hi, double scale, const char* unit) {
  Key k = MakeKey(name, Key::Type::kNumber, lo, hi, unit);
  k.set_number = [field, scale](void* c, double v) {
    static_cast<C*>(c)->*field = static_cast<M>(std::llround(v * scale));
  };
  k.get_number = [field, scale](const void* c) {
    return static_cast<double>(static_cast<const C*>(c)->*field) / scale;
  };
  return k;
}

template <class C>
Key Real(const char* name, double C::*field, double lo, double hi, const char* unit) {
  Key k = MakeKey(name, Key::Type::kNumber, lo, hi, unit);
  k.set_number = [field](void* c, double v) { static_cast<C*>(c)->*field = v; };
  k.get_number = [field](const void* c) { return static_cast<const C*>(c)->*field; };
  return k;
}

template <class C>
Key Bool(const char* name, bool C::*field) {
  Key k = MakeKey(name, Key::Type::kBool, 0, 1, "true/false");
  k.set_bool = [field](void* c, bool v) { static_cast<C*>(c)->*field = v; };
  k.get_number = [field](const void* c) { return static_cast<const C*>(c)->*field ? 1.0 : 0.0; };
  return k;
}

struct DeviceSection {
  std::string model = "";
  std::string name = "";
  std::string backing = "";
};

struct Section {
  const char* name;
  std::vector<Key> keys;
};

std::vector<Key> DeviceKeys() {
  Key model = MakeKey("model", Key::Type::kChoice);
  model.choices = {"ssd", "hdd", "cloud", "zero"};
  model.set_choice = [](void* c, const std::string& v) {
    static_cast<DeviceSection*>(c)->model = v;
  };
  Key name = MakeKey("name", Key::Type::kChoice);  // free text: empty choice list
  name.set_choice = [](void* c, const std::string& v) { static_cast<DeviceSection*>(c)->name = v; };
  return {model, name};
}

std::vector<Key> SsdKeys() {
  using C = SsdConfig;
  Key pre = MakeKey("precondition", Key::Type::kChoice);
  pre.choices = {"none", "full", "steady"};
  pre.set_choice = [](void* c, const std::string& v) {
    static_cast<C*>(c)->precondition = v == "none"   ? Precondition::kNone
                                       : v == "full" ? Precondition::kFull
                                                     : Precondition::kSteady;
  };
  Key arbitration = MakeKey("arbitration", Key::Type::kChoice);
  arbitration.choices = {"fifo", "round_robin"};
  arbitration.set_choice = [](void* c, const std::string& v) {
    static_cast<C*>(c)->arbitration = v == "fifo" ? Arbitration::kFifo : Arbitration::kRoundRobin;
  };
  return {
      Int("channels", &C::channels, 1, 64, "count"),
      Int("dies_per_channel", &C::dies_per_channel, 1, 64, "count"),
      Int("planes_per_die", &C::planes_per_die, 1, 16, "count"),
      Int("blocks_per_plane", &C::blocks_per_plane, 4, 1 << 20, "count"),
      Int("pages_per_block", &C::pages_per_block, 1, 1 << 16, "count"),
      Int("page_bytes", &C::page_bytes, 512, 1 << 20, "bytes"),
      Int("mapping_unit_bytes", &C::mapping_unit_bytes, 512, 1 << 16, "bytes"),
      Int("logical_block_bytes", &C::logical_block_bytes, 512, 4096, "bytes (512 or 4096)"),
      Int("capacity_bytes", &C::capacity_bytes, 0, 0x1p60, "bytes (0 = raw - 7%)"),
      Scaled("page_read_us", &C::page_read_ns, 0, 100000, 1e3, "us"),
      Scaled("page_program_us", &C::page_program_ns, 0, 100000, 1e3, "us"),
      Scaled("block_erase_ms", &C::block_erase_ns, 0, 1000, 1e6, "ms"),
      Int("channel_mb_s", &C::channel_mb_s, 1, 1000000, "MB/s"),
      Int("host_link_mb_s", &C::host_link_mb_s, 0, 1000000, "MB/s (0 = not modelled)"),
      Scaled("controller_overhead_us", &C::controller_overhead_ns, 0, 100000, 1e3, "us"),
      Int("max_inflight_commands", &C::max_inflight_commands, 1, 65536, "count"),
      arbitration,
      Int("max_inflight_reads", &C::max_inflight_reads, 0, 65536,
          "count (0 = max_inflight_commands; round_robin only)"),
      Int("max_inflight_writes", &C::max_inflight_writes, 0, 65536,
          "count (0 = max_inflight_commands; round_robin only)"),
      Int("max_inflight_per_queue", &C::max_inflight_per_queue, 0, 65536,
          "count per submission queue and pipeline (0 = no limit; round_robin only)"),
      Int("write_buffer_bytes", &C::write_buffer_bytes, 0, 0x1p40, "bytes"),
      Bool("power_loss_protection", &C::power_loss_protection),
      Int("gc_foreground_free_blocks", &C::gc_foreground_free_blocks, 2, 100000, "blocks per die"),
      Int("gc_background_free_blocks", &C::gc_background_free_blocks, 2, 100000, "blocks per die"),
      Scaled("gc_idle_delay_ms", &C::gc_idle_delay_ns, 0, 1000000, 1e6, "ms"),
      Bool("suspend", &C::suspend_enabled),
      Scaled("suspend_latency_us", &C::suspend_latency_ns, 0, 100000, 1e3, "us"),
      Scaled("resume_latency_us", &C::resume_latency_ns, 0, 100000, 1e3, "us"),
      Int("max_suspends_per_op", &C::max_suspends_per_op, 0, 65535, "count (0 = unlimited)"),
      Bool("independent_plane_reads", &C::independent_plane_reads),
      Int("slc_static_bytes", &C::slc_static_bytes, 0, 0x1p50, "bytes (0 = no static SLC)"),
      Int("slc_dynamic_max_bytes", &C::slc_dynamic_max_bytes, 0, 0x1p50,
          "bytes (0 = no dynamic SLC)"),
      Int("slc_dynamic_free_ratio", &C::slc_dynamic_free_ratio, 1, 64,
          "free bytes per byte of dynamic SLC"),
      Scaled("slc_program_us", &C::slc_program_ns, 0, 100000, 1e3, "us (> 0 with an SLC cache)"),
      Scaled("slc_fold_idle_ms", &C::slc_fold_idle_ns, 0, 1000000, 1e6, "ms"),
      Scaled("page_read_lower_us", &C::page_read_lower_ns, 0, 100000, 1e3, "us (0 = page_read_us)"),
      Scaled("page_read_middle_us", &C::page_read_middle_ns, 0, 100000, 1e3,
             "us (0 = page_read_us)"),
      Scaled("page_read_upper_us", &C::page_read_upper_ns, 0, 100000, 1e3, "us (0 = page_read_us)"),
      Scaled("page_program_lower_us", &C::page_program_lower_ns, 0, 100000, 1e3,
             "us (0 = page_program_us)"),
      Scaled("page_program_middle_us", &C::page_program_middle_ns, 0, 100000, 1e3,
             "us (0 = page_program_us)"),
      Scaled("page_program_upper_us", &C::page_program_upper_ns, 0, 100000, 1e3,
             "us (0 = page_program_us)"),
      Real("read_retry_probability", &C::read_retry_probability, 0, 1,
           "per sensing round (0 = no retries)"),
      Scaled("read_retry_us", &C::read_retry_ns, 0, 100000, 1e3, "us per round"),
      Int("read_retry_max_rounds", &C::read_retry_max_rounds, 0, 64,
          "count (>= 1 when read_retry_probability > 0)"),
      Bool("gc_yield", &C::gc_yield),
      Bool("gc_background_preemptible", &C::gc_background_preemptible),
      pre,
      Real("precondition_overwrite_factor", &C::precondition_overwrite_factor, 0, 16, "x capacity"),
  };
}

std::vector<Key> HddKeys() {
  using C = HddConfig;
  Key policy = MakeKey("queue_policy", Key::Type::kChoice);
  policy.choices = {"fifo", "sptf"};
  policy.set_choice = [](void* c, const std::string& v) {
    static_cast<C*>(c)->queue_policy = v == "fifo" ? QueuePolicy::kFifo : QueuePolicy::kSptf;
  };
  Key zones =
      MakeKey("zone_mb_s", Key::Type::kNumberList, 1, 5000, "MB/s per zone, outermost first");
  zones.set_list = [](void* c, const std::vector<double>& v) { static_cast<C*>(c)->zone_mb_s = v; };
  return {
      Int("capacity_bytes", &C::capacity_bytes, 1 << 20, 0x1p60, "bytes"),
      Int("logical_block_bytes", &C::logical_block_bytes, 512, 4096, "bytes (512 or 4096)"),
      Int("rpm", &C::rpm, 1000, 20000, "rev/min"),
      Int("heads", &C::heads, 1, 64, "count"),
      zones,
      Scaled("track_to_track_seek_ms", &C::track_to_track_seek_ns, 0.01, 10, 1e6, "ms"),
      Scaled("average_seek_ms", &C::average_seek_ns, 0.1, 50, 1e6, "ms"),
      Scaled("full_stroke_seek_ms", &C::full_stroke_seek_ns, 0.1, 100, 1e6, "ms"),
      Scaled("head_switch_ms", &C::head_switch_ns, 0, 10, 1e6, "ms"),
      Scaled("write_settle_ms", &C::write_settle_ns, 0, 10, 1e6, "ms"),
      Scaled("command_overhead_us", &C::command_overhead_ns, 0, 10000, 1e3, "us"),
      Int("interface_mb_s", &C::interface_mb_s, 0, 100000, "MB/s (0 = not modelled)"),
      Int("cache_bytes", &C::cache_bytes, 0, 0x1p34, "bytes"),
      Int("read_ahead_bytes", &C::read_ahead_bytes, 0, 0x1p30, "bytes"),
      Int("cache_segments", &C::cache_segments, 1, 1024, "count"),
      Bool("write_cache", &C::write_cache),
      Scaled("flush_overhead_us", &C::flush_overhead_ns, 0, 1000000, 1e3, "us"),
      policy,
      Scaled("sptf_max_wait_ms", &C::sptf_max_wait_ns, 1, 100000, 1e6, "ms"),
  };
}

std::vector<Key> ZeroKeys() {
  using C = ZeroConfig;
  return {
      Int("capacity_bytes", &C::capacity_bytes, 1 << 20, 0x1p60, "bytes"),
      Int("logical_block_bytes", &C::logical_block_bytes, 512, 4096, "bytes (512 or 4096)"),
      Scaled("latency_us", &C::latency_ns, 0, 1000000, 1e3, "us"),
  };
}

std::vector<Key> CloudKeys() {
  using C = CloudConfig;
  Key backing = MakeKey("backing", Key::Type::kChoice);
  backing.choices = {"ssd", "hdd", "zero"};
  // Stored in the [device] record; see Load().
  return {
      backing,
      Int("capacity_bytes", &C::capacity_bytes, 0, 0x1p60, "bytes (0 = backing device's)"),
      Int("iops_per_gib", &C::iops_per_gib, 0, 10000, "IOPS per GiB (0 = fixed iops_cap)"),
      Int("iops_baseline_min", &C::iops_baseline_min, 1, 1000000, "IOPS"),
      Int("iops_baseline_max", &C::iops_baseline_max, 1, 1000000, "IOPS"),
      Int("iops_cap", &C::iops_cap, 1, 1000000, "IOPS"),
      Int("iops_burst", &C::iops_burst, 0, 1000000, "IOPS (0 = no burst bucket)"),
      Int("burst_credits", &C::burst_credits, 0, 1e9, "I/O credits"),
      Int("throughput_mib_s", &C::throughput_mib_s, 1, 100000, "MiB/s"),
      Int("io_unit_bytes", &C::io_unit_bytes, 4096, 16 << 20, "bytes"),
      Scaled("latency_floor_us", &C::latency_floor_ns, 0, 1000000, 1e3, "us"),
      Scaled("latency_jitter_mean_us", &C::latency_jitter_mean_ns, 0, 1000000, 1e3, "us"),
  };
}

// One [[fault]] table (see devmodel/faults.h). Times in ms of virtual time
// after the origin the caller sets (blklab: the workload's start).
std::vector<Key> FaultKeys() {
  using C = Fault;
  Key kind = MakeKey("kind", Key::Type::kChoice);
  kind.choices = {"stall", "slow", "media_error", "timeout", "reset"};
  kind.set_choice = [](void* c, const std::string& v) {
    static_cast<C*>(c)->kind = v == "stall"         ? FaultKind::kStall
                               : v == "slow"        ? FaultKind::kSlow
                               : v == "media_error" ? FaultKind::kMediaError
                               : v == "timeout"     ? FaultKind::kTimeout
                                                    : FaultKind::kReset;
  };
  return {
      kind,
      Scaled("at_ms", &C::at_ns, 0, 1e9, 1e6,
             "ms after the origin (default 0)"),
      Int("after_requests", &C::after_requests, 0, 1e12,
          "requests since the origin: the fault starts at the next one"),
      Real("probability", &C::probability, 0, 1,
           "per request, > 0 (media_error and timeout only; seeded)"),
      Scaled("duration_ms", &C::duration_ns, 0, 1e9, 1e6,
             "ms (> 0; media_error: absent = to the end of the run; not on reset or with "
             "probability)"),
      Scaled("factor", &C::factor_ppm, 1, 1e6, 1e6,
             "x service time, or a cloud volume's rate limit / factor (> 1; slow only)"),
      Int("lba_start", &C::lba_start, 0, 0x1p60,
          "logical blocks (media_error; timeout: absent = every block)"),
      Int("lba_count", &C::lba_count, 1, 0x1p60,
          "logical blocks (media_error; timeout: absent = every block)"),
      Scaled("retry_ms", &C::retry_ns, 0, 1e6, 1e6,
             "ms the drive retries before it reports the error (media_error only)"),
      Bool("writes", &C::writes),
  };
}

std::string FormatNumber(double v) {
  if (v == std::floor(v) && std::fabs(v) < 0x1p63) {
    return std::to_string(static_cast<long long>(v));
  }
  std::ostringstream s;
  s << v;
  return s.str();
}

std::string RangeText(const Key& k) {
  switch (k.type) {
    case Key::Type::kBool:
      return "true or false";
    case Key::Type::kChoice: {
      if (k.choices.empty()) return "a string";
      std::string s = "one of";
      for (const auto& c : k.choices) s += " \"" + c + "\"";
      return s;
    }
    case Key::Type::kInt:
      return "an integer in [" + FormatNumber(k.lo) + ", " + FormatNumber(k.hi) + "] " + k.unit;
    case Key::Type::kNumber:
      return "a number in [" + FormatNumber(k.lo) + ", " + FormatNumber(k.hi) + "] " + k.unit;
    case Key::Type::kNumberList:
      return "an array of numbers in [" + FormatNumber(k.lo) + ", " + FormatNumber(k.hi) + "] " +
             k.unit;
  }
  return "";
}

std::string TypeName(const toml::value& v) {
  if (v.is_integer()) return "an integer";
  if (v.is_floating()) return "a float";
  if (v.is_boolean()) return "a boolean";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  if (v.is_table()) return "a table";
  return "a date/time";
}

// "<line>:" and a description of the first byte that cannot be in a TOML
// file (invalid UTF-8, or a control character other than tab, CR and LF), or
// "" if there is none. Checked before parsing, so binary garbage gets one
// clear line instead of a parser error that quotes it.
std::string FirstNonText(const std::string& text) {
  std::size_t line = 1;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    char what[96] = "";
    int extra = 0;
    if (c == '\n') {
      ++line;
    } else if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f) {
      std::snprintf(what, sizeof what, "control character 0x%02x", c);
    } else if (c >= 0x80) {
      extra = c >= 0xf5 ? -1 : c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc2 ? 1 : -1;
      for (int k = 1; extra > 0 && k <= extra; ++k) {
        if (i + k >= text.size() || (static_cast<unsigned char>(text[i + k]) & 0xc0) != 0x80) {
          extra = -1;
        }
      }
      if (extra < 0) std::snprintf(what, sizeof what, "byte 0x%02x that is not UTF-8", c);
    }
    if (what[0] != '\0') {
      return std::to_string(line) + ": not a TOML text file: " + what + " at byte " +
             std::to_string(i);
    }
    i += 1 + std::max(extra, 0);
  }
  return "";
}

// toml11's multi-line syntax error (with a source excerpt) as one line:
// "<line>: TOML syntax error: <what> (<what the excerpt points at>)".
std::string SyntaxError(const toml::syntax_error& e) {
  const std::string all = e.what();
  std::string what = all.substr(0, all.find('\n'));
  if (what.rfind("[error] ", 0) == 0) what.erase(0, 8);
  if (what.rfind("toml::", 0) == 0 && what.find(": ") != std::string::npos) {
    what.erase(0, what.find(": ") + 2);  // toml11's function name
  }
  while (!what.empty() && (what.back() == '.' || what.back() == ' ')) what.pop_back();
  // The last marked excerpt line ("   | ^--- is not a valid key").
  std::string hint;
  for (std::size_t pos = 0; (pos = all.find("\n", pos)) != std::string::npos;) {
    const std::size_t start = ++pos;
    const std::string line = all.substr(start, all.find('\n', start) - start);
    const std::size_t mark = line.find_first_of("^~");
    if (line.find(" | ") == std::string::npos || mark == std::string::npos) continue;
    const std::size_t text = line.find_first_not_of("^~-", mark);
    if (text != std::string::npos && line.find_first_not_of(' ', text) != std::string::npos) {
      hint = line.substr(line.find_first_not_of(' ', text));
    }
  }
  const auto line = e.location().line();
  return (line > 0 ? std::to_string(line) + ":" : std::string()) + " TOML syntax error: " + what +
         (hint.empty() ? "" : " (" + hint + ")");
}

// The integer as written when toml11 saturated it (it reads values beyond
// 64 bits as INT64_MAX / INT64_MIN), else as stored.
std::string IntegerText(const toml::value& v) {
  const std::int64_t x = v.as_integer();
  if (x != INT64_MAX && x != INT64_MIN) return std::to_string(x);
  const auto& loc = v.location();
  if (loc.column() == 0 || loc.column() - 1 >= loc.line_str().size()) return std::to_string(x);
  const std::string token = loc.line_str().substr(loc.column() - 1, loc.region());
  std::string digits;
  for (char c : token) {
    if (c != '_' && c != '+') digits += c;
  }
  return digits == std::to_string(x) ? digits : token + " (beyond 64-bit integers)";
}

// One line per key of a table, sorted, with its value typed and exact
// (floats in hex): two sections give the same text exactly when they hold
// the same keys and values. Keys the loader validated only: int, float,
// bool, string and arrays of those.
std::string CanonicalText(const toml::value& v, const std::string& prefix = "") {
  if (v.is_table()) {
    std::vector<std::string> keys;
    for (const auto& kv : v.as_table()) keys.push_back(kv.first);
    std::sort(keys.begin(), keys.end());
    std::string out;
    for (const std::string& k : keys) {
      const toml::value& item = v.at(k);
      const std::string name = prefix + k;
      out += item.is_table() ? CanonicalText(item, name + ".") : name + " = " + CanonicalText(item) + "\n";
    }
    return out;
  }
  if (v.is_array()) {
    std::string out = "[";
    for (const toml::value& e : v.as_array()) out += CanonicalText(e) + ",";
    return out + "]";
  }
  char buf[64];
  if (v.is_integer()) {
    std::snprintf(buf, sizeof buf, "int %lld", static_cast<long long>(v.as_integer()));
    return buf;
  }
  if (v.is_floating()) {
    std::snprintf(buf, sizeof buf, "float %a", v.as_floating());
    return buf;
  }
  if (v.is_boolean()) return v.as_boolean() ? "bool true" : "bool false";
  if (v.is_string()) {
    const std::string& str = v.as_string().str;
    return "string " + std::to_string(str.size()) + ":" + str;
  }
  return "other " + toml::format(v);
}

class Loader {
 public:
  Loader(std::string name, std::string* error) : name_(std::move(name)), error_(error) {}
  void set_state_cache_dir(std::string dir) { state_cache_dir_ = std::move(dir); }
  void set_without_precondition(bool v) { without_precondition_ = v; }

  bool Fail(const toml::value& at, const std::string& what) {
    const auto line = at.location().line();
    *error_ = name_ + ":" + (line > 0 ? std::to_string(line) + ":" : std::string()) + " " + what;
    return false;
  }

  // Applies every key of table `section` to `config`.
  bool Apply(const toml::value& root, const std::string& section, const std::vector<Key>& keys,
             void* config) {
    const toml::value& table = root.at(section);
    if (!table.is_table()) {
      return Fail(table, "'" + section + "' must be a table ([" + section + "])");
    }
    return ApplyTable(table, section, "[" + section + "]", keys, config);
  }

  // Applies every key of `table` (named `section` in key names, `header` in
  // the list of allowed keys) to `config`.
  bool ApplyTable(const toml::value& table, const std::string& section, const std::string& header,
                  const std::vector<Key>& keys, void* config) {
    std::vector<std::string> names;
    for (const auto& kv : table.as_table()) names.push_back(kv.first);
    std::sort(names.begin(), names.end());  // deterministic first error
    for (const std::string& name : names) {
      const toml::value& v = table.at(name);
      const std::string full = section + "." + name;
      const Key* key = nullptr;
      for (const Key& k : keys) {
        if (name == k.name) key = &k;
      }
      if (key == nullptr) {
        std::string allowed;
        for (const Key& k : keys) allowed += (allowed.empty() ? "" : ", ") + std::string(k.name);
        return Fail(v,
                    "unknown key '" + full + "' (allowed in " + header + ": " + allowed + ")");
      }
      key_lines_.emplace_back(full, v.location().line());
      const std::string want = "key '" + full + "' must be " + RangeText(*key);
      switch (key->type) {
        case Key::Type::kBool:
          if (!v.is_boolean()) return Fail(v, want + ", got " + TypeName(v));
          key->set_bool(config, v.as_boolean());
          break;
        case Key::Type::kChoice: {
          if (!v.is_string()) return Fail(v, want + ", got " + TypeName(v));
          const std::string s = v.as_string().str;
          if (!key->choices.empty() &&
              std::find(key->choices.begin(), key->choices.end(), s) == key->choices.end()) {
            return Fail(v, want + ", got \"" + s + "\"");
          }
          if (key->set_choice) key->set_choice(config, s);
          if (full == "cloud.backing") backing_ = s;
          break;
        }
        case Key::Type::kInt: {
          if (!v.is_integer()) return Fail(v, want + ", got " + TypeName(v));
          const std::int64_t x = v.as_integer();
          if (static_cast<double>(x) < key->lo || static_cast<double>(x) > key->hi) {
            return Fail(v, want + ", got " + IntegerText(v));
          }
          key->set_int(config, x);
          break;
        }
        case Key::Type::kNumber: {
          if (!v.is_integer() && !v.is_floating()) return Fail(v, want + ", got " + TypeName(v));
          const double x = v.is_integer() ? static_cast<double>(v.as_integer()) : v.as_floating();
          if (!(x >= key->lo && x <= key->hi)) {
            return Fail(v, want + ", got " + (v.is_integer() ? IntegerText(v) : FormatNumber(x)));
          }
          key->set_number(config, x);
          break;
        }
        case Key::Type::kNumberList: {
          if (!v.is_array() || v.as_array().empty()) {
            return Fail(v, want + " (non-empty), got " +
                               (v.is_array() ? std::string("an empty array") : TypeName(v)));
          }
          std::vector<double> list;
          for (const toml::value& e : v.as_array()) {
            if (!e.is_integer() && !e.is_floating()) {
              return Fail(e, want + ", got an element that is " + TypeName(e));
            }
            const double x = e.is_integer() ? static_cast<double>(e.as_integer()) : e.as_floating();
            if (!(x >= key->lo && x <= key->hi)) {
              return Fail(e, want + ", got an element " + FormatNumber(x));
            }
            list.push_back(x);
          }
          key->set_list(config, list);
          break;
        }
      }
    }
    return true;
  }

  // Parses, validates and (unless `check_only`) builds the device. With
  // `check_only` an SSD is validated by CheckSsdConfig and stood in for by a
  // zero-latency device of the same size, so no state is built.
  std::unique_ptr<Device> Build(const std::string& text, std::uint64_t seed, bool check_only) {
    if (const std::string bad = FirstNonText(text); !bad.empty()) {
      *error_ = name_ + ":" + bad;
      return nullptr;
    }
    toml::value root;
    try {
      std::istringstream in(text);
      root = toml::parse(in, name_);
    } catch (const toml::syntax_error& e) {
      *error_ = name_ + ":" + SyntaxError(e);
      return nullptr;
    } catch (const std::exception& e) {
      *error_ = name_ + ": TOML syntax error: " + e.what();
      return nullptr;
    }
    if (!root.is_table()) {
      *error_ = name_ + ": not a TOML table";
      return nullptr;
    }
    const std::vector<std::string> sections = {"device", "ssd", "hdd", "zero", "cloud", "fault"};
    for (const auto& kv : root.as_table()) {
      if (std::find(sections.begin(), sections.end(), kv.first) == sections.end()) {
        Fail(kv.second,
             "unknown section '" + kv.first + "' (allowed: device, ssd, hdd, zero, cloud, fault)");
        return nullptr;
      }
    }
    std::vector<Fault> faults;
    if (root.contains("fault") && !ParseFaults(root.at("fault"), &faults)) return nullptr;
    if (!root.contains("device")) {
      *error_ =
          name_ +
          ": missing section [device] (with model = \"ssd\" | \"hdd\" | \"cloud\" | \"zero\")";
      return nullptr;
    }
    DeviceSection dev;
    if (!Apply(root, "device", DeviceKeys(), &dev)) return nullptr;
    if (dev.model.empty()) {
      Fail(root.at("device"),
           "missing key 'device.model' (one of \"ssd\" \"hdd\" \"cloud\" \"zero\")");
      return nullptr;
    }
    model_ = dev.model;
    std::string inner = dev.model;
    CloudConfig cloud;
    if (dev.model == "cloud") {
      if (!Require(root, "cloud") || !Apply(root, "cloud", CloudKeys(), &cloud)) return nullptr;
      if (backing_.empty()) {
        Fail(root.at("cloud"), "missing key 'cloud.backing' (one of \"ssd\" \"hdd\" \"zero\")");
        return nullptr;
      }
      inner = backing_;
    }
    for (const std::string s : {"ssd", "hdd", "zero"}) {
      if (root.contains(s) && s != inner) {
        Fail(root.at(s), "section [" + s + "] is not used by model '" + dev.model + "'" +
                             (dev.model == "cloud" ? " with backing '" + inner + "'" : ""));
        return nullptr;
      }
    }
    if (dev.model != "cloud" && root.contains("cloud")) {
      Fail(root.at("cloud"), "section [cloud] is only used by model 'cloud'");
      return nullptr;
    }
    std::unique_ptr<Device> device;
    std::string why;
    if (inner == "ssd") {
      SsdConfig c;
      if (!Require(root, "ssd") || !Apply(root, "ssd", SsdKeys(), &c)) return nullptr;
      if (without_precondition_) c.precondition = Precondition::kNone;
      if (!check_only) {
        device = NewSsd(c, seed, SsdStateCache{state_cache_dir_, CanonicalText(root.at("ssd"))},
                        &why);
      } else if (std::uint64_t capacity = 0; CheckSsdConfig(c, &capacity, &why)) {
        device = NewZero(ZeroConfig{capacity, c.logical_block_bytes, 0}, &why);
        stand_in_polls_ = true;  // as SsdModel::deadlines_final(): reads are polled
      }
    } else if (inner == "hdd") {
      HddConfig c;
      if (!Require(root, "hdd") || !Apply(root, "hdd", HddKeys(), &c)) return nullptr;
      device = NewHdd(c, &why);  // cheap: no state grows with the capacity
    } else {
      ZeroConfig c;
      if (root.contains("zero") && !Apply(root, "zero", ZeroKeys(), &c)) return nullptr;
      device = NewZero(c, &why);
    }
    if (device != nullptr && dev.model == "cloud") {
      // A distinct stream for the network jitter than for preconditioning.
      device = NewCloudVolume(cloud, std::move(device), seed ^ 0x636c6f7564ull, &why);
    }
    if (device == nullptr) *error_ = name_ + ":" + LineOfFirstKeyIn(why) + " " + why;
    if (device != nullptr && !CheckFaultRanges(faults, *device)) return nullptr;
    if (device != nullptr && !faults.empty()) {
      device = std::make_unique<FaultyDevice>(std::move(device),
                                              FaultSchedule(std::move(faults), seed));
    }
    return device;
  }

  // Every media_error and timeout range lies on the device: [lba_start,
  // lba_start + lba_count) within its capacity in logical blocks.
  bool CheckFaultRanges(const std::vector<Fault>& faults, const Device& device) {
    const std::uint64_t blocks = device.capacity_bytes() / device.logical_block_bytes();
    for (std::size_t i = 0; i < faults.size(); ++i) {
      const Fault& f = faults[i];
      if (f.kind != FaultKind::kMediaError && f.kind != FaultKind::kTimeout) continue;
      if (f.lba_count == 0) continue;  // a timeout of every block
      if (f.lba_start >= blocks || f.lba_count > blocks - f.lba_start) {
        return Fail(fault_tables_[i].at("lba_start"),
                    "key 'fault.lba_start' + 'fault.lba_count' (" + std::to_string(f.lba_start) +
                        " + " + std::to_string(f.lba_count) + ") ends past the device's " +
                        std::to_string(blocks) + " logical blocks of " +
                        std::to_string(device.logical_block_bytes()) + " bytes");
      }
    }
    return true;
  }

  // Every [[fault]] table: kind required; at most one of at_ms (default 0),
  // after_requests, probability ("media_error" and "timeout" only, > 0, no
  // duration_ms, the range optional); duration_ms required but on
  // "media_error" (absent: to the end of the run); factor on "slow" only (and
  // then required); lba_start, lba_count (required), retry_ms and writes on
  // "media_error"; lba_start and lba_count (both or neither) and writes on
  // "timeout" too; "reset" takes at_ms alone (it lasts until the host resets
  // the device).
  bool ParseFaults(const toml::value& list, std::vector<Fault>* faults) {
    if (!list.is_array()) {
      return Fail(list, "'fault' must be an array of tables ([[fault]])");
    }
    for (const toml::value& table : list.as_array()) {
      if (!table.is_table()) {
        return Fail(table, "'fault' must be an array of tables ([[fault]]), got an element that is " +
                               TypeName(table));
      }
      Fault f;
      f.factor_ppm = 0;
      if (!ApplyTable(table, "fault", "[[fault]]", FaultKeys(), &f)) return false;
      if (!table.contains("kind")) {
        return Fail(table, "missing key 'fault.kind' (one of \"stall\" \"slow\" \"media_error\" "
                           "\"timeout\" \"reset\")");
      }
      const bool reset = f.kind == FaultKind::kReset;
      const bool media = f.kind == FaultKind::kMediaError;
      const bool timeout = f.kind == FaultKind::kTimeout;
      // When: at most one of at_ms (default 0), after_requests, probability.
      const char* when = nullptr;
      for (const char* key : {"at_ms", "after_requests", "probability"}) {
        if (!table.contains(key)) continue;
        if (when != nullptr) {
          return Fail(table.at(key), std::string("key 'fault.") + key +
                                         "' cannot be given with 'fault." + when +
                                         "' (a fault starts at one of at_ms, after_requests, "
                                         "probability)");
        }
        when = key;
      }
      const bool picked = table.contains("probability");
      if (table.contains("after_requests")) f.trigger = FaultTrigger::kAfterRequests;
      if (picked) {
        f.trigger = FaultTrigger::kProbability;
        if (!media && !timeout) {
          return Fail(table.at("probability"),
                      "key 'fault.probability' is for kind \"media_error\" or \"timeout\" only "
                      "(it picks single requests; stall, slow and reset are windows: start them "
                      "with at_ms or after_requests)");
        }
        if (!(f.probability > 0)) {
          return Fail(table.at("probability"),
                      "key 'fault.probability' must be > 0 (the chance per request)");
        }
        if (table.contains("duration_ms")) {
          return Fail(table.at("duration_ms"),
                      "key 'fault.duration_ms' is not for a fault with 'fault.probability' (it "
                      "picks requests from the origin to the end of the run)");
        }
        if (media && table.contains("lba_start") != table.contains("lba_count")) {
          return Fail(table, "a \"media_error\" fault with 'fault.probability' takes both "
                             "'fault.lba_start' and 'fault.lba_count' (a range) or neither "
                             "(every block)");
        }
      }
      for (const char* key : {"lba_start", "lba_count", "retry_ms", "writes"}) {
        const bool timeout_key = std::string(key) != "retry_ms";
        if (!media && !(timeout && timeout_key) && table.contains(key)) {
          return Fail(table.at(key), std::string("key 'fault.") + key + "' is for kind " +
                                         (timeout_key ? "\"media_error\" or \"timeout\" only"
                                                      : "\"media_error\" only"));
        }
      }
      if (timeout && table.contains("lba_start") != table.contains("lba_count")) {
        return Fail(table, "a \"timeout\" fault takes both 'fault.lba_start' and "
                           "'fault.lba_count' (a range) or neither (every block)");
      }
      if (timeout && table.contains("factor")) {
        return Fail(table.at("factor"), "key 'fault.factor' is for kind \"slow\" only");
      }
      if (media && !picked && !table.contains("lba_count")) {
        return Fail(table, "missing key 'fault.lba_count' (blocks that fail, from lba_start)");
      }
      if (media && !picked && !table.contains("lba_start")) {
        return Fail(table, "missing key 'fault.lba_start' (the first block that fails)");
      }
      if (media && table.contains("factor")) {
        return Fail(table.at("factor"), "key 'fault.factor' is for kind \"slow\" only");
      }
      if (reset && table.contains("factor")) {
        return Fail(table.at("factor"), "key 'fault.factor' is for kind \"slow\" only");
      }
      if (reset && table.contains("duration_ms")) {
        return Fail(table.at("duration_ms"),
                    "key 'fault.duration_ms' is not for kind \"reset\" (the device stays "
                    "failed until the host resets it)");
      }
      if (reset || picked || (media && !table.contains("duration_ms"))) {
        f.duration_ns = kForever;
      } else if (!table.contains("duration_ms") || f.duration_ns == 0) {
        return Fail(table.contains("duration_ms") ? table.at("duration_ms") : table,
                    "key 'fault.duration_ms' must be a number of ms > 0 (at least 1 ns)");
      }
      if (f.kind == FaultKind::kStall && table.contains("factor")) {
        return Fail(table.at("factor"), "key 'fault.factor' is for kind \"slow\" only");
      }
      if (f.kind == FaultKind::kSlow && f.factor_ppm <= 1000000) {
        return Fail(table.contains("factor") ? table.at("factor") : table,
                    "key 'fault.factor' must be > 1 on a \"slow\" fault (service times "
                    "multiplied by it)");
      }
      if (f.kind != FaultKind::kSlow) f.factor_ppm = 1000000;
      faults->push_back(f);
      fault_tables_.push_back(table);
    }
    return true;
  }

  const std::string& model() const { return model_; }
  // With check_only: the device stood in for needs polls (an SSD with a link).
  bool stand_in_polls() const { return stand_in_polls_; }

 private:
  bool Require(const toml::value& root, const std::string& section) {
    if (root.contains(section)) return true;
    *error_ = name_ + ": missing section [" + section + "]";
    return false;
  }

  // "<line>:" of the key set in the file that `why` names first, or "" when
  // it names none (the value is a default). Keys are named "section.key".
  std::string LineOfFirstKeyIn(const std::string& why) const {
    std::size_t best_pos = std::string::npos;
    std::size_t best_line = 0;
    for (const auto& [key, line] : key_lines_) {
      for (std::size_t pos = why.find(key); pos != std::string::npos;
           pos = why.find(key, pos + 1)) {
        const std::size_t end = pos + key.size();
        const bool whole =
            (pos == 0 || !IsKeyChar(why[pos - 1])) && (end == why.size() || !IsKeyChar(why[end]));
        if (whole && pos < best_pos) {
          best_pos = pos;
          best_line = line;
        }
        if (whole) break;
      }
    }
    return best_line > 0 ? std::to_string(best_line) + ":" : std::string();
  }
  static bool IsKeyChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
  }

  std::string name_;
  std::string* error_;
  std::string state_cache_dir_;
  bool without_precondition_ = false;
  std::string backing_;
  std::string model_;
  bool stand_in_polls_ = false;
  std::vector<std::pair<std::string, std::size_t>> key_lines_;  // every key applied
  std::vector<toml::value> fault_tables_;  // the [[fault]] tables, as faults were parsed
};

}  // namespace

std::unique_ptr<Device> LoadProfileFromString(const std::string& toml_text, const std::string& name,
                                              std::uint64_t seed, std::string* error) {
  return LoadProfileFromString(toml_text, name, seed, LoadOptions{}, error);
}

std::unique_ptr<Device> LoadProfileFromString(const std::string& toml_text, const std::string& name,
                                              std::uint64_t seed, const LoadOptions& options,
                                              std::string* error) {
  std::string ignored;
  Loader loader(name, error != nullptr ? error : &ignored);
  loader.set_state_cache_dir(options.state_cache_dir);
  loader.set_without_precondition(options.without_precondition);
  try {
    return loader.Build(toml_text, seed, /*check_only=*/false);
  } catch (const std::exception& e) {  // toml11 lookups and allocation
    if (error != nullptr) *error = name + ": " + e.what();
    return nullptr;
  }
}

namespace {

bool ReadFile(const std::string& path, std::string* text, std::string* error) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    if (error != nullptr) *error = path + ": is a directory, not a profile";
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (error != nullptr) *error = path + ": cannot open file";
    return false;
  }
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) {
    if (error != nullptr) *error = path + ": cannot read file";
    return false;
  }
  *text = s.str();
  return true;
}

}  // namespace

std::unique_ptr<Device> LoadProfile(const std::string& path, std::uint64_t seed,
                                    std::string* error) {
  return LoadProfile(path, seed, LoadOptions{}, error);
}

std::unique_ptr<Device> LoadProfile(const std::string& path, std::uint64_t seed,
                                    const LoadOptions& options, std::string* error) {
  std::string text;
  if (!ReadFile(path, &text, error)) return nullptr;
  return LoadProfileFromString(text, path, seed, options, error);
}

bool CheckProfileFromString(const std::string& toml_text, const std::string& name,
                            ProfileSummary* summary, std::string* error) {
  std::string ignored;
  Loader loader(name, error != nullptr ? error : &ignored);
  try {
    const std::unique_ptr<Device> device = loader.Build(toml_text, 0, /*check_only=*/true);
    if (device == nullptr) return false;
    if (summary != nullptr) {
      summary->model = loader.model();
      summary->capacity_bytes = device->capacity_bytes();
      summary->logical_block_bytes = device->logical_block_bytes();
      summary->rotation_rate = device->rotation_rate_rpm();
      summary->deadlines_final = device->deadlines_final() && !loader.stand_in_polls();
    }
    return true;
  } catch (const std::exception& e) {
    if (error != nullptr) *error = name + ": " + e.what();
    return false;
  }
}

bool CheckProfile(const std::string& path, ProfileSummary* summary, std::string* error) {
  std::string text;
  return ReadFile(path, &text, error) && CheckProfileFromString(text, path, summary, error);
}

std::string ProfileKeyReference() {
  std::string out;
  const std::vector<Section> sections = {{"device", DeviceKeys()},
                                         {"ssd", SsdKeys()},
                                         {"hdd", HddKeys()},
                                         {"zero", ZeroKeys()},
                                         {"cloud", CloudKeys()},
                                         {"fault", FaultKeys()}};
  for (const Section& s : sections) {
    for (const Key& k : s.keys)
      out += std::string(s.name) + "." + k.name + ": " + RangeText(k) + "\n";
  }
  return out;
}

std::vector<ProfileKeyInfo> ProfileKeys() {
  const DeviceSection device;
  const SsdConfig ssd;
  const HddConfig hdd;
  const ZeroConfig zero;
  const CloudConfig cloud;
  const Fault fault;
  const struct {
    Section section;
    const void* defaults;
  } sections[] = {{{"device", DeviceKeys()}, &device}, {{"ssd", SsdKeys()}, &ssd},
                  {{"hdd", HddKeys()}, &hdd},          {{"zero", ZeroKeys()}, &zero},
                  {{"cloud", CloudKeys()}, &cloud},    {{"fault", FaultKeys()}, &fault}};
  std::vector<ProfileKeyInfo> out;
  for (const auto& s : sections) {
    for (const Key& k : s.section.keys) {
      ProfileKeyInfo info;
      info.section = s.section.name;
      info.name = k.name;
      info.allowed = RangeText(k);
      info.has_default = static_cast<bool>(k.get_number);
      if (info.has_default) info.default_value = k.get_number(s.defaults);
      out.push_back(info);
    }
  }
  return out;
}

}  // namespace devmodel

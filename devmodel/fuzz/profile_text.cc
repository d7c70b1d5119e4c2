#include "profile_text.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>
#include <toml.hpp>
#include <utility>
#include <vector>

#include "devmodel/profile.h"
#include "devmodel/ssd.h"

namespace devmodel::fuzz {
namespace {

// One key of the profile format, parsed from ProfileKeyReference().
struct KeySpec {
  enum class Type { kInt, kNumber, kBool, kChoice, kString, kNumberList };
  std::string section, key;
  Type type = Type::kInt;
  double lo = 0, hi = 0;
  std::vector<std::string> choices;
};

std::vector<KeySpec> ParseReference() {
  std::vector<KeySpec> specs;
  std::istringstream lines(ProfileKeyReference());
  for (std::string line; std::getline(lines, line);) {
    const std::size_t dot = line.find('.'), colon = line.find(": ");
    if (dot == std::string::npos || colon == std::string::npos) continue;
    KeySpec k;
    k.section = line.substr(0, dot);
    k.key = line.substr(dot + 1, colon - dot - 1);
    const std::string range = line.substr(colon + 2);
    auto bounds = [&k, &range] {
      const std::size_t open = range.find('['), comma = range.find(", ", open);
      k.lo = std::stod(range.substr(open + 1, comma - open - 1));
      k.hi = std::stod(range.substr(comma + 2, range.find(']') - comma - 2));
    };
    if (range == "true or false") {
      k.type = KeySpec::Type::kBool;
    } else if (range == "a string") {
      k.type = KeySpec::Type::kString;
    } else if (range.rfind("one of", 0) == 0) {
      k.type = KeySpec::Type::kChoice;
      for (std::size_t q = range.find('"'); q != std::string::npos;) {
        const std::size_t end = range.find('"', q + 1);
        k.choices.push_back(range.substr(q + 1, end - q - 1));
        q = range.find('"', end + 1);
      }
    } else if (range.rfind("an integer", 0) == 0) {
      k.type = KeySpec::Type::kInt;
      bounds();
    } else if (range.rfind("a number", 0) == 0) {
      k.type = KeySpec::Type::kNumber;
      bounds();
    } else if (range.rfind("an array of numbers", 0) == 0) {
      k.type = KeySpec::Type::kNumberList;
      bounds();
    } else {
      std::abort();  // the reference grew a form this parser does not know
    }
    specs.push_back(std::move(k));
  }
  return specs;
}

const std::vector<KeySpec>& Specs() {
  static const std::vector<KeySpec> specs = ParseReference();
  return specs;
}

// section -> ordered (key, TOML value text).
using ProfileMap = std::map<std::string, std::vector<std::pair<std::string, std::string>>>;

void Set(ProfileMap* p, const std::string& section, const std::string& key,
         const std::string& value) {
  for (auto& kv : (*p)[section]) {
    if (kv.first == key) {
      kv.second = value;
      return;
    }
  }
  (*p)[section].emplace_back(key, value);
}

void Remove(ProfileMap* p, const std::string& section, const std::string& key) {
  auto& keys = (*p)[section];
  for (auto it = keys.begin(); it != keys.end(); ++it) {
    if (it->first == key) {
      keys.erase(it);
      return;
    }
  }
}

// Small valid devices, one per model (every figure in range, consistent).
ProfileMap Baseline(const std::string& model, const std::string& backing, bool sptf) {
  ProfileMap p;
  Set(&p, "device", "model", "\"" + model + "\"");
  Set(&p, "device", "name", "\"fuzz\"");
  const std::string inner = model == "cloud" ? backing : model;
  if (model == "cloud") {
    Set(&p, "cloud", "backing", "\"" + backing + "\"");
    Set(&p, "cloud", "iops_cap", "3000");
    Set(&p, "cloud", "throughput_mib_s", "125");
    Set(&p, "cloud", "latency_floor_us", "500.0");
    Set(&p, "cloud", "latency_jitter_mean_us", "100.0");
  }
  if (inner == "ssd") {
    Set(&p, "ssd", "channels", "2");
    Set(&p, "ssd", "dies_per_channel", "2");
    Set(&p, "ssd", "planes_per_die", "1");
    Set(&p, "ssd", "blocks_per_plane", "32");
    Set(&p, "ssd", "pages_per_block", "16");
    Set(&p, "ssd", "page_bytes", "8192");
    Set(&p, "ssd", "mapping_unit_bytes", "4096");
    Set(&p, "ssd", "logical_block_bytes", "512");
    Set(&p, "ssd", "write_buffer_bytes", "65536");
    Set(&p, "ssd", "gc_background_free_blocks", "4");
    Set(&p, "ssd", "gc_idle_delay_ms", "1.0");
  } else if (inner == "hdd") {
    Set(&p, "hdd", "capacity_bytes", "1073741824");
    Set(&p, "hdd", "rpm", "7200");
    Set(&p, "hdd", "heads", "2");
    Set(&p, "hdd", "zone_mb_s", "[200.0, 150.0]");
    Set(&p, "hdd", "cache_bytes", "1048576");
    Set(&p, "hdd", "read_ahead_bytes", "65536");
    Set(&p, "hdd", "cache_segments", "4");
    Set(&p, "hdd", "queue_policy", sptf && model == "hdd" ? "\"sptf\"" : "\"fifo\"");
  } else {
    Set(&p, "zero", "capacity_bytes", "67108864");
    Set(&p, "zero", "latency_us", "10.0");
  }
  return p;
}

std::vector<ProfileMap> LoadShipped() {
  std::vector<ProfileMap> out;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(DEVMODEL_PROFILE_DIR)) {
    if (e.path().extension() == ".toml") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    const toml::value root = toml::parse(f.string());
    ProfileMap p;
    for (const auto& [section, table] : root.as_table()) {
      for (const auto& [key, value] : table.as_table()) {
        Set(&p, section, key, toml::format(value, 0));
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

std::string Number(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  std::string t = s.str();
  if (t.find_first_of(".eE") == std::string::npos && std::isfinite(v)) t += ".0";
  return t;
}

std::string Int(std::int64_t v) { return std::to_string(v); }

// A value inside [lo, hi] skewed towards small ones and the bounds.
double InRange(FuzzedDataProvider& d, double lo, double hi) {
  switch (d.ConsumeIntegralInRange(0, 5)) {
    case 0:
      return lo;
    case 1:
      return hi;
    case 2:
      return lo + d.ConsumeIntegralInRange<std::uint32_t>(0, 64);
    case 3: {  // log-uniform
      const double a = std::log2(std::max(1.0, lo)), b = std::log2(std::max(1.0, hi));
      return std::exp2(a + (b - a) * d.ConsumeProbability<double>());
    }
    case 4:  // a power of two
      return std::exp2(d.ConsumeIntegralInRange(0, 62));
    default:
      return lo + (hi - lo) * d.ConsumeProbability<double>();
  }
}

std::string InRangeValue(FuzzedDataProvider& d, const KeySpec& k) {
  switch (k.type) {
    case KeySpec::Type::kBool:
      return d.ConsumeBool() ? "true" : "false";
    case KeySpec::Type::kString:
      return toml::format(toml::value(d.ConsumeRandomLengthString(16)));
    case KeySpec::Type::kChoice:
      return "\"" + k.choices[d.ConsumeIntegralInRange<std::size_t>(0, k.choices.size() - 1)] +
             "\"";
    case KeySpec::Type::kInt:
      return Int(static_cast<std::int64_t>(std::clamp(InRange(d, k.lo, k.hi), k.lo, k.hi)));
    case KeySpec::Type::kNumber: {
      const double v = InRange(d, k.lo, k.hi);
      return Number(d.ConsumeBool() ? std::round(v) : v);
    }
    case KeySpec::Type::kNumberList: {
      std::string s = "[";
      const int n = d.ConsumeIntegralInRange(1, d.ConsumeBool() ? 300 : 6);
      for (int i = 0; i < n; ++i) {
        s += (i ? ", " : "") + Number(InRange(d, k.lo, k.hi));
      }
      return s + "]";
    }
  }
  return "0";
}

std::string OutOfRangeValue(FuzzedDataProvider& d, const KeySpec& k) {
  static const char* const kOdd[] = {"9223372036854775807",
                                     "-9223372036854775808",
                                     "1e308",
                                     "-1e308",
                                     "nan",
                                     "inf",
                                     "-inf",
                                     "-0.0",
                                     "-1",
                                     "0",
                                     "4294967296",
                                     "4294967295",
                                     "1e19",
                                     "0.5",
                                     "18446744073709551615",
                                     "\"\"",
                                     "true",
                                     "[]",
                                     "[[1]]",
                                     "{ a = 1 }",
                                     "1979-05-27T07:32:00Z"};
  switch (d.ConsumeIntegralInRange(0, 3)) {
    case 0:
      return k.type == KeySpec::Type::kInt ? Int(static_cast<std::int64_t>(k.lo) - 1)
                                           : Number(k.lo - 1e-3);
    case 1:
      return k.type == KeySpec::Type::kInt ? Int(static_cast<std::int64_t>(k.hi) + 1)
                                           : Number(k.hi * 1.001 + 1e-3);
    case 2:
      return "\"" + d.ConsumeRandomLengthString(8) + "\"";
    default:
      return d.PickValueInArray(kOdd);
  }
}

std::string ToText(const ProfileMap& p, FuzzedDataProvider& d) {
  std::string text;
  // [device] first, as people write them; sometimes another order.
  std::vector<std::string> order;
  if (p.count("device")) order.push_back("device");
  for (const auto& [section, keys] : p) {
    if (section != "device") order.push_back(section);
  }
  if (d.ConsumeIntegralInRange(0, 15) == 15) std::reverse(order.begin(), order.end());
  for (const std::string& section : order) {
    const auto& keys = p.at(section);
    text += "[" + section + "]\n";
    for (const auto& [key, value] : keys) text += key + " = " + value + "\n";
  }
  return text;
}

// Now and then [[fault]] tables (devmodel/faults.h): stalls, slow windows,
// media errors, timeouts and resets within the session's first few ms,
// requests and blocks, so that they fire; rarely a bad one.
std::string FaultTables(FuzzedDataProvider& d) {
  static const char* const kKinds[] = {"stall",   "slow",        "media_error",
                                       "timeout", "stall",       "slow",
                                       "media_error", "timeout", "reset",
                                       "brownout"};
  const int n = std::max(0, d.ConsumeIntegralInRange(0, 15) - 11);  // 0 mostly, else 1-4
  std::string text;
  for (int i = 0; i < n; ++i) {
    const std::string kind = d.PickValueInArray(kKinds);
    text += "\n[[fault]]\nkind = \"" + kind + "\"\n";
    // When: a time, after a few requests, or (media errors and timeouts) a
    // chance per request; rarely two of them (refused).
    const int when = d.ConsumeIntegralInRange(0, 7);
    const bool picked = when == 6 || when == 7;
    if (when <= 3 || d.ConsumeIntegralInRange(0, 31) == 0) {
      text += "at_ms = " + Number(d.ConsumeFloatingPointInRange(0.0, 50.0)) + "\n";
    }
    if (when == 4 || when == 5) {
      text += "after_requests = " + std::to_string(d.ConsumeIntegralInRange(0, 64)) + "\n";
    }
    if (picked) text += "probability = " + Number(d.ConsumeFloatingPointInRange(0.0, 1.0)) + "\n";
    // A reset lasts until the host resets the device, a chance per request
    // to the end of the run: no duration.
    if ((kind != "reset" && !picked) != (d.ConsumeIntegralInRange(0, 31) == 0)) {
      text += "duration_ms = " + Number(d.ConsumeFloatingPointInRange(0.0, 50.0)) + "\n";
    }
    if ((kind == "slow") != (d.ConsumeIntegralInRange(0, 31) == 0)) {
      text += "factor = " + Number(d.ConsumeFloatingPointInRange(0.5, 20.0)) + "\n";
    }
    const bool ranged = kind == "media_error" || (kind == "timeout" && d.ConsumeBool());
    if (ranged != (d.ConsumeIntegralInRange(0, 31) == 0)) {
      text += "lba_start = " + std::to_string(d.ConsumeIntegralInRange(0, 4096)) + "\n";
      text += "lba_count = " + std::to_string(d.ConsumeIntegralInRange(0, 4096)) + "\n";
      if (d.ConsumeBool()) {
        text += "retry_ms = " + Number(d.ConsumeFloatingPointInRange(0.0, 5.0)) + "\n";
      }
      if (d.ConsumeBool()) text += "writes = true\n";
    }
  }
  return text;
}

std::uint64_t IntOr(const toml::value& table, const char* key, std::uint64_t fallback) {
  if (!table.is_table() || !table.contains(key) || !table.at(key).is_integer()) return fallback;
  return static_cast<std::uint64_t>(table.at(key).as_integer());
}

}  // namespace

std::string GenerateProfile(FuzzedDataProvider& d) {
  static const std::vector<ProfileMap> shipped = LoadShipped();
  static const char* const kModels[] = {"ssd", "hdd", "cloud", "zero"};
  static const char* const kBackings[] = {"ssd", "hdd", "zero"};
  ProfileMap p;
  // Zero bytes (an exhausted input) pick a valid baseline and keep every key.
  const int source = d.ConsumeIntegralInRange(0, 15);
  if (source == 15) {
    return d.ConsumeRandomLengthString(512);  // raw text now and then
  } else if (source >= 12) {
    p = shipped[d.ConsumeIntegralInRange<std::size_t>(0, shipped.size() - 1)];
  } else {
    const char* model = d.PickValueInArray(kModels);
    const char* backing = d.PickValueInArray(kBackings);
    p = Baseline(model, backing, d.ConsumeBool());
  }
  // Every key of the sections present: mostly kept; else in range, out of
  // range or removed.
  for (const KeySpec& k : Specs()) {
    if (!p.count(k.section)) continue;
    const int action = d.ConsumeIntegralInRange(0, 31);
    if (action >= 24 && action <= 29) {
      Set(&p, k.section, k.key, InRangeValue(d, k));
    } else if (action == 30) {
      Set(&p, k.section, k.key, OutOfRangeValue(d, k));
    } else if (action == 31) {
      Remove(&p, k.section, k.key);
    }
  }
  switch (d.ConsumeIntegralInRange(0, 31)) {
    case 31:
      Set(&p, d.PickValueInArray(kBackings), "no_such_key", "1");
      break;
    case 30:
      Set(&p, "nvme", "depth", "32");
      break;
    case 29:
      p.erase(d.PickValueInArray(kModels));
      break;
    case 28:
      p.erase("device");
      break;
    case 27:
      Set(&p, d.PickValueInArray(kModels), "capacity_bytes", "0");
      break;
    default:
      break;
  }
  const std::string text = ToText(p, d);
  return text + FaultTables(d);
}

bool CheapToBuild(const std::string& toml_text) {
  toml::value root;
  try {
    std::istringstream in(toml_text);
    root = toml::parse(in, "cheap.toml");
  } catch (const std::exception&) {
    return false;
  }
  const toml::value& device = root.at("device");
  std::string inner = device.at("model").as_string().str;
  if (inner == "cloud") inner = root.at("cloud").at("backing").as_string().str;
  if (inner != "ssd") return true;
  const toml::value& ssd = root.at("ssd");
  const SsdConfig defaults;
  const std::uint64_t blocks = IntOr(ssd, "channels", defaults.channels) *
                               IntOr(ssd, "dies_per_channel", defaults.dies_per_channel) *
                               IntOr(ssd, "blocks_per_plane", defaults.blocks_per_plane);
  if (blocks > (1u << 16)) return false;
  const bool preconditioned =
      ssd.contains("precondition") && ssd.at("precondition").as_string().str != "none";
  if (!preconditioned) return true;
  SsdConfig c;
  c.channels = static_cast<std::uint32_t>(IntOr(ssd, "channels", c.channels));
  c.dies_per_channel =
      static_cast<std::uint32_t>(IntOr(ssd, "dies_per_channel", c.dies_per_channel));
  c.planes_per_die = static_cast<std::uint32_t>(IntOr(ssd, "planes_per_die", c.planes_per_die));
  c.blocks_per_plane =
      static_cast<std::uint32_t>(IntOr(ssd, "blocks_per_plane", c.blocks_per_plane));
  c.pages_per_block = static_cast<std::uint32_t>(IntOr(ssd, "pages_per_block", c.pages_per_block));
  c.page_bytes = static_cast<std::uint32_t>(IntOr(ssd, "page_bytes", c.page_bytes));
  c.mapping_unit_bytes =
      static_cast<std::uint32_t>(IntOr(ssd, "mapping_unit_bytes", c.mapping_unit_bytes));
  c.logical_block_bytes =
      static_cast<std::uint32_t>(IntOr(ssd, "logical_block_bytes", c.logical_block_bytes));
  c.capacity_bytes = IntOr(ssd, "capacity_bytes", c.capacity_bytes);
  c.gc_foreground_free_blocks = static_cast<std::uint32_t>(
      IntOr(ssd, "gc_foreground_free_blocks", c.gc_foreground_free_blocks));
  c.gc_background_free_blocks = static_cast<std::uint32_t>(
      IntOr(ssd, "gc_background_free_blocks", c.gc_background_free_blocks));
  std::uint64_t capacity = 0;
  if (!CheckSsdConfig(c, &capacity, nullptr)) return false;
  double factor = 1.0;
  if (ssd.contains("precondition_overwrite_factor")) {
    const toml::value& f = ssd.at("precondition_overwrite_factor");
    factor = f.is_integer() ? static_cast<double>(f.as_integer()) : f.as_floating();
  }
  return static_cast<double>(capacity / c.mapping_unit_bytes) * (1.0 + factor) <= (1u << 16);
}

}  // namespace devmodel::fuzz

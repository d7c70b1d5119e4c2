#include "sim.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <queue>
#include <sstream>
#include <string_view>

#include <nlohmann/json.hpp>

namespace devmodel::sim {
namespace {

constexpr std::uint64_t kNsPerSecond = 1000000000;

// fio's default percentile_list.
constexpr double kPercentiles[] = {1,  5,  10, 20, 30,   40,   50,   60,   70,
                                   80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99};

// SplitMix64 (Steele, Lea, Flood 2014): a job's offsets and op mix.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t Next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) (multiply-high; bias below n / 2^64).
  std::uint64_t Below(std::uint64_t n) {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }

 private:
  std::uint64_t state_;
};

bool ParseSize(std::string_view text, std::uint64_t* out) {
  if (text.empty()) return false;
  std::size_t i = 0;
  std::uint64_t v = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    if (v > (UINT64_MAX - 9) / 10) return false;
    v = v * 10 + static_cast<std::uint64_t>(text[i] - '0');
    ++i;
  }
  if (i == 0) return false;
  std::string suffix(text.substr(i));
  for (char& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  int shift = 0;
  if (!suffix.empty()) {
    const std::string_view units = "kmgt";
    const std::size_t u = units.find(suffix[0]);
    const std::string rest = suffix.substr(1);
    if (u == std::string_view::npos || !(rest.empty() || rest == "b" || rest == "ib")) {
      return false;
    }
    shift = 10 * static_cast<int>(u + 1);
  }
  if (shift > 0 && v > (UINT64_MAX >> shift)) return false;
  *out = v << shift;
  return true;
}

bool ParseUint(std::string_view text, std::uint64_t lo, std::uint64_t hi, std::uint64_t* out) {
  std::uint64_t v = 0;
  if (text.empty() || text.size() > 19) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (v < lo || v > hi) return false;
  *out = v;
  return true;
}

struct Slot {
  std::uint64_t tag = 0;
  std::uint64_t submitted_ns = 0;
  std::uint64_t bytes = 0;
  bool read = true;
  bool final = true;
  bool pending_read = true;  // the op of the next request, drawn when the slot frees
};

struct JobState {
  SplitMix64 rng{0};
  std::uint64_t base = 0, units = 0;  // region start and its size in blocks
  std::uint64_t cursor = 0;            // sequential jobs: next block
  std::uint64_t reads_issued = 0, writes_issued = 0;
  std::uint32_t in_flight = 0;
  std::uint32_t queue_id = 1;
  std::vector<Slot> slots;
};

enum class Kind : std::uint8_t { kIssue, kDone };

struct Event {
  std::uint64_t time_ns;
  std::uint64_t seq;  // ties at one time: first pushed, first run
  std::uint32_t job;
  std::uint32_t slot;
  Kind kind;
  bool operator>(const Event& o) const {
    return time_ns != o.time_ns ? time_ns > o.time_ns : seq > o.seq;
  }
};

// Earliest issue time of the k-th request of a direction paced at `rate`.
std::uint64_t PacedAt(std::uint64_t k, std::uint64_t bytes, std::uint64_t rate) {
  if (rate == 0) return 0;
  const unsigned __int128 t = static_cast<unsigned __int128>(k) * bytes * kNsPerSecond / rate;
  return t > UINT64_MAX ? UINT64_MAX : static_cast<std::uint64_t>(t);
}

nlohmann::json DirectionJson(const DirectionStats& d, std::uint64_t runtime_ns) {
  const double seconds = static_cast<double>(runtime_ns) / kNsPerSecond;
  nlohmann::json pct = nlohmann::json::object();
  if (d.ios > 0) {
    for (double p : kPercentiles) {
      char key[32];
      std::snprintf(key, sizeof key, "%f", p);
      pct[key] = d.clat.Percentile(p);
    }
  }
  const auto bw = static_cast<std::uint64_t>(
      static_cast<unsigned __int128>(d.bytes) * kNsPerSecond / runtime_ns);
  return {
      {"total_ios", d.ios},
      {"io_bytes", d.bytes},
      {"bw_bytes", bw},
      {"bw", bw / 1024},
      {"iops", static_cast<double>(d.ios) / seconds},
      {"runtime", runtime_ns / 1000000},
      {"clat_ns",
       {{"min", d.clat_min_ns},
        {"max", d.clat_max_ns},
        {"mean", d.ios > 0 ? static_cast<double>(d.clat_sum_ns) / static_cast<double>(d.ios) : 0.0},
        {"N", d.ios},
        {"percentile", pct}}},
  };
}

}  // namespace

int LatencyHistogram::BucketOf(std::uint64_t ns) {
  if (ns < 2 * kPerGroup) return static_cast<int>(ns);
  const int msb = 63 - __builtin_clzll(ns);
  const int error_bits = msb - kBits;
  const int base = (error_bits + 1) << kBits;
  const int offset = static_cast<int>((ns >> error_bits) & (kPerGroup - 1));
  return std::min(base + offset, kBuckets - 1);
}

std::uint64_t LatencyHistogram::BucketValue(int bucket) {
  if (bucket < 2 * kPerGroup) return static_cast<std::uint64_t>(bucket);
  const int error_bits = (bucket >> kBits) - 1;
  const std::uint64_t base = std::uint64_t{1} << (error_bits + kBits);
  const std::uint64_t k = static_cast<std::uint64_t>(bucket % kPerGroup);
  // base + (k + 0.5) x 2^error_bits, error_bits >= 1 here: exact in integers.
  return base + (k << error_bits) + (std::uint64_t{1} << (error_bits - 1));
}

void LatencyHistogram::Add(std::uint64_t ns) {
  ++buckets_[static_cast<std::size_t>(BucketOf(ns))];
  ++count_;
}

std::uint64_t LatencyHistogram::Percentile(double pct) const {
  const long double want = static_cast<long double>(pct) / 100.0L * count_;
  std::uint64_t sum = 0;
  for (int i = 0; i < kBuckets; ++i) {
    sum += buckets_[static_cast<std::size_t>(i)];
    if (sum > 0 && static_cast<long double>(sum) >= want) return BucketValue(i);
  }
  return BucketValue(kBuckets - 1);
}

bool ParseTime(const std::string& text, std::uint64_t* ns, std::string* error) {
  std::size_t i = 0;
  while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
  const std::string number = text.substr(0, i), unit = text.substr(i);
  char* end = nullptr;
  const double v = std::strtod(number.c_str(), &end);
  double scale = 0;
  if (unit.empty() || unit == "s") scale = 1e9;
  if (unit == "ms") scale = 1e6;
  if (unit == "us") scale = 1e3;
  if (unit == "m") scale = 60e9;
  if (number.empty() || *end != '\0' || scale == 0 || !(v >= 0) || v * scale > 1e18) {
    *error = "'" + text + "' is not a time (e.g. 30s, 500ms, 250us, 2m)";
    return false;
  }
  *ns = static_cast<std::uint64_t>(v * scale + 0.5);
  return true;
}

bool ParseJob(const std::string& text, JobSpec* job, std::string* error) {
  *job = JobSpec{};
  job->text = text;
  const std::size_t colon = text.find(':');
  job->name = text.substr(0, colon);
  if (job->name.empty()) {
    *error = "job '" + text + "': expected NAME:key=value,... (e.g. reader:rw=randread,iodepth=1)";
    return false;
  }
  std::string rw = "read";
  std::uint64_t mix = 50;
  bool mix_given = false;
  // key=value pairs split at commas; rate=R,W has one inside, so a part
  // without '=' continues the value before it (rate's write figure only).
  std::vector<std::pair<std::string, std::string>> pairs;
  std::string_view rest =
      colon == std::string::npos ? std::string_view() : std::string_view(text).substr(colon + 1);
  while (colon != std::string::npos) {
    const std::size_t comma = rest.find(',');
    const std::string part(rest.substr(0, comma));
    const std::size_t eq = part.find('=');
    if (eq != std::string::npos) {
      pairs.emplace_back(part.substr(0, eq), part.substr(eq + 1));
    } else if (!pairs.empty() && pairs.back().first == "rate" &&
               pairs.back().second.find(',') == std::string::npos) {
      pairs.back().second += "," + part;
    } else {
      *error = "job " + job->name + ": '" + part + "' is not key=value";
      return false;
    }
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  for (const auto& [key, value] : pairs) {
    auto bad = [&](const std::string& want) {
      *error = "job " + job->name + ": " + key + "=" + value + ": " + want;
      return false;
    };
    std::uint64_t v = 0;
    if (key == "rw") {
      static const char* kModes[] = {"read", "write", "randread", "randwrite", "rw", "readwrite",
                                     "randrw"};
      if (std::find_if(std::begin(kModes), std::end(kModes),
                       [&](const char* m) { return value == m; }) == std::end(kModes)) {
        return bad("expected read, write, randread, randwrite, rw, readwrite or randrw");
      }
      rw = value;
    } else if (key == "bs") {
      if (!ParseSize(value, &v) || v == 0 || v > (std::uint64_t{1} << 30)) {
        return bad("expected a size in (0, 1g] (e.g. 4k)");
      }
      job->block_bytes = v;
    } else if (key == "iodepth") {
      if (!ParseUint(value, 1, 65536, &v)) return bad("expected an integer in [1, 65536]");
      job->iodepth = static_cast<std::uint32_t>(v);
    } else if (key == "rwmixread") {
      if (!ParseUint(value, 0, 100, &v)) return bad("expected an integer in [0, 100]");
      mix = v;
      mix_given = true;
    } else if (key == "rate") {
      const std::size_t c = value.find(',');
      const std::string r = value.substr(0, c);
      const std::string w = c == std::string::npos ? r : value.substr(c + 1);
      std::uint64_t rv = 0, wv = 0;
      if ((!r.empty() && !ParseSize(r, &rv)) || (!w.empty() && !ParseSize(w, &wv))) {
        return bad("expected READ[,WRITE] in bytes/s (k, m, g: 1024s)");
      }
      job->read_rate_bytes_s = rv;
      job->write_rate_bytes_s = wv;
    } else if (key == "offset") {
      if (!ParseSize(value, &v)) return bad("expected a size in bytes");
      job->offset_bytes = v;
    } else if (key == "size") {
      if (!ParseSize(value, &v)) return bad("expected a size in bytes");
      job->size_bytes = v;
    } else if (key == "io_size") {
      if (!ParseSize(value, &v) || v == 0) return bad("expected a size in bytes above 0");
      job->io_size_bytes = v;
    } else if (key == "queue") {
      if (!ParseUint(value, 1, 65535, &v)) return bad("expected an integer in [1, 65535]");
      job->queue_id = static_cast<std::uint32_t>(v);
    } else {
      *error = "job " + job->name + ": unknown key '" + key +
               "' (rw, bs, iodepth, rwmixread, rate, offset, size, io_size, queue)";
      return false;
    }
  }
  job->random = rw.rfind("rand", 0) == 0;
  if (rw == "read" || rw == "randread") job->read_pct = 100;
  if (rw == "write" || rw == "randwrite") job->read_pct = 0;
  if (rw == "rw" || rw == "readwrite" || rw == "randrw") job->read_pct = static_cast<std::uint32_t>(mix);
  if (mix_given && job->read_pct != mix) {
    *error = "job " + job->name + ": rwmixread applies to rw=rw or rw=randrw, not rw=" + rw;
    return false;
  }
  return true;
}

bool Run(devmodel_t* model, const SimSpec& spec, std::vector<JobResult>* results,
         std::string* error) {
  return RunAndDrain(model, spec, results, nullptr, error);
}

bool RunAndDrain(devmodel_t* model, const SimSpec& spec, std::vector<JobResult>* results,
                 std::uint64_t* idle_ns, std::string* error) {
  const std::uint64_t capacity = devmodel_capacity_bytes(model);
  const std::uint64_t block = devmodel_logical_block_bytes(model);
  const std::uint64_t end = spec.ramp_ns + spec.runtime_ns;
  if (spec.runtime_ns == 0) {
    *error = "runtime must be above 0";
    return false;
  }
  std::vector<JobState> jobs(spec.jobs.size());
  results->assign(spec.jobs.size(), JobResult{});
  for (std::size_t j = 0; j < spec.jobs.size(); ++j) {
    const JobSpec& s = spec.jobs[j];
    JobState& st = jobs[j];
    if (s.block_bytes % block != 0 || s.offset_bytes % block != 0) {
      *error = "job " + s.name + ": bs and offset must be multiples of the device's " +
               std::to_string(block) + "-byte logical block";
      return false;
    }
    const std::uint64_t size =
        s.size_bytes != 0 ? s.size_bytes : (s.offset_bytes < capacity ? capacity - s.offset_bytes : 0);
    if (s.offset_bytes >= capacity || size > capacity - s.offset_bytes || size < s.block_bytes) {
      *error = "job " + s.name + ": offset " + std::to_string(s.offset_bytes) + " + size " +
               std::to_string(size) + " does not fit the device's " + std::to_string(capacity) +
               " bytes with bs " + std::to_string(s.block_bytes);
      return false;
    }
    st.rng = SplitMix64(spec.seed ^ (0xd1b54a32d192ed03ull * (j + 1)));
    st.base = s.offset_bytes;
    st.units = size / s.block_bytes;
    st.queue_id = s.queue_id != 0 ? s.queue_id : static_cast<std::uint32_t>(j + 1);
    st.slots.resize(s.iodepth);
  }

  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events;
  std::uint64_t seq = 0, last_tag = 0;
  auto push = [&](std::uint64_t t, std::uint32_t j, std::uint32_t s, Kind k) {
    events.push(Event{t, seq++, j, s, k});
  };
  char* err = nullptr;
  auto refused = [&](const std::string& what) {
    *error = what + ": " + (err != nullptr ? err : "refused");
    devmodel_free(err);
    return false;
  };

  // Frees slot s of job j at `now`: draws its next op and books its issue
  // (none once the job has issued its io_size).
  auto free_slot = [&](std::uint32_t j, std::uint32_t s, std::uint64_t now) {
    const JobSpec& js = spec.jobs[j];
    JobState& st = jobs[j];
    Slot& slot = st.slots[s];
    if (js.io_size_bytes != 0 &&
        (st.reads_issued + st.writes_issued) * js.block_bytes >= js.io_size_bytes) {
      return;
    }
    slot.pending_read = js.read_pct == 100 || (js.read_pct > 0 && st.rng.Below(100) < js.read_pct);
    const std::uint64_t k = slot.pending_read ? st.reads_issued++ : st.writes_issued++;
    const std::uint64_t at = std::max(
        now, PacedAt(k, js.block_bytes,
                     slot.pending_read ? js.read_rate_bytes_s : js.write_rate_bytes_s));
    if (at < end) {
      push(at, j, s, Kind::kIssue);
      ++st.in_flight;
    }
  };

  for (std::uint32_t j = 0; j < jobs.size(); ++j) {
    for (std::uint32_t s = 0; s < jobs[j].slots.size(); ++s) free_slot(j, s, 0);
  }
  while (!events.empty()) {
    const Event e = events.top();
    if (e.time_ns > end) break;
    events.pop();
    const JobSpec& js = spec.jobs[e.job];
    JobState& st = jobs[e.job];
    Slot& slot = st.slots[e.slot];
    devmodel_completion c;
    if (e.kind == Kind::kIssue) {
      const std::uint64_t unit = js.random ? st.rng.Below(st.units) : st.cursor;
      if (!js.random) st.cursor = (st.cursor + 1) % st.units;
      const devmodel_request r = {
          slot.pending_read ? static_cast<std::uint32_t>(DEVMODEL_OP_READ)
                            : static_cast<std::uint32_t>(DEVMODEL_OP_WRITE),
          st.queue_id, st.base + unit * js.block_bytes, js.block_bytes, ++last_tag};
      devmodel_submit(model, &r, e.time_ns, &c, &err);
      if (err != nullptr) return refused("job " + js.name);
      slot.tag = r.tag;
      slot.submitted_ns = e.time_ns;
      slot.bytes = js.block_bytes;
      slot.read = slot.pending_read;
      slot.final = c.final != 0;
      push(std::max<std::uint64_t>(c.deadline_ns, e.time_ns), e.job, e.slot, Kind::kDone);
      continue;
    }
    if (!slot.final) {
      devmodel_poll(model, slot.tag, e.time_ns, &c, &err);
      if (err != nullptr) return refused("job " + js.name);
      slot.final = c.final != 0;
      push(std::max<std::uint64_t>(c.deadline_ns, e.time_ns), e.job, e.slot, Kind::kDone);
      continue;
    }
    JobResult& result = (*results)[e.job];
    --st.in_flight;
    result.end_ns = e.time_ns;
    if (spec.log_interval_ns != 0) {
      const std::uint64_t i = (e.time_ns - 1) / spec.log_interval_ns;
      if (result.interval_bytes.size() <= i) result.interval_bytes.resize(i + 1, 0);
      result.interval_bytes[i] += slot.bytes;
    }
    if (e.time_ns > spec.ramp_ns) {
      DirectionStats& d = slot.read ? (*results)[e.job].read : (*results)[e.job].write;
      const std::uint64_t clat = e.time_ns - slot.submitted_ns;
      d.clat_min_ns = d.ios == 0 ? clat : std::min(d.clat_min_ns, clat);
      d.clat_max_ns = std::max(d.clat_max_ns, clat);
      ++d.ios;
      d.bytes += slot.bytes;
      d.clat_sum_ns += clat;
      d.clat.Add(clat);
    }
    free_slot(e.job, e.slot, e.time_ns);
    if (st.in_flight == 0 && js.io_size_bytes != 0) result.finished = true;
  }
  if (idle_ns == nullptr) return true;
  // What is left are requests in flight (issues all fall before the end).
  std::uint64_t idle = end;
  while (!events.empty()) {
    const Event e = events.top();
    events.pop();
    Slot& slot = jobs[e.job].slots[e.slot];
    idle = std::max(idle, e.time_ns);
    if (e.kind != Kind::kIssue && !slot.final) {
      devmodel_completion c;
      devmodel_poll(model, slot.tag, e.time_ns, &c, &err);
      if (err != nullptr) return refused("job " + spec.jobs[e.job].name);
      slot.final = c.final != 0;
      push(std::max<std::uint64_t>(c.deadline_ns, e.time_ns), e.job, e.slot, Kind::kDone);
    }
  }
  *idle_ns = idle;
  return true;
}

std::string ResultJson(const std::string& profile, const SimSpec& spec,
                       const std::vector<JobResult>& results, const std::string& counters) {
  nlohmann::json jobs = nlohmann::json::array();
  for (std::size_t j = 0; j < results.size(); ++j) {
    std::uint64_t runtime = spec.runtime_ns;
    if (results[j].finished && results[j].end_ns < spec.ramp_ns + spec.runtime_ns) {
      runtime = std::max<std::uint64_t>(
          results[j].end_ns > spec.ramp_ns ? results[j].end_ns - spec.ramp_ns : 0, 1);
    }
    jobs.push_back({{"jobname", spec.jobs[j].name},
                    {"job options", spec.jobs[j].text},
                    {"read", DirectionJson(results[j].read, runtime)},
                    {"write", DirectionJson(results[j].write, runtime)}});
  }
  const nlohmann::json out = {
      {"devmodel-sim",
       {{"version", devmodel_version()},
        {"profile", profile},
        {"seed", spec.seed},
        {"ramp_ns", spec.ramp_ns},
        {"runtime_ns", spec.runtime_ns}}},
      {"jobs", jobs},
      {"counters", counters.empty() ? nlohmann::json() : nlohmann::json::parse(counters)},
  };
  return out.dump(2) + "\n";
}

std::string BandwidthLog(const SimSpec& spec, const JobSpec& job, const JobResult& result) {
  const std::uint64_t interval = spec.log_interval_ns;
  const std::uint64_t ns_per_ms = 1000000;
  const int ddir = job.read_pct < 100 ? 1 : 0;
  std::ostringstream out;
  for (std::size_t i = 0; i < result.interval_bytes.size(); ++i) {
    const std::uint64_t from = i * interval;
    std::uint64_t to = from + interval;
    if (i + 1 == result.interval_bytes.size() && result.finished) {
      // The last interval ends with the job, at a whole ms as fio's clock.
      to = std::max(from + ns_per_ms, (result.end_ns + ns_per_ms - 1) / ns_per_ms * ns_per_ms);
      to = std::min(to, from + interval);
    }
    const unsigned __int128 scaled =
        static_cast<unsigned __int128>(result.interval_bytes[i]) * kNsPerSecond;
    const std::uint64_t den = std::uint64_t{1024} * (to - from);
    const auto kib_s = static_cast<std::uint64_t>((scaled + den / 2) / den);
    out << to / ns_per_ms << ", " << kib_s << ", " << ddir << ", 0, 0\n";
  }
  return out.str();
}

}  // namespace devmodel::sim

#include "devmodel/faults.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "shifted_clock.h"

namespace devmodel {
namespace {

// a + b, saturating (a guest that warps the clock gets no wrap-around).
TimeNs AddSat(TimeNs a, TimeNs b) { return b > ~TimeNs{0} - a ? ~TimeNs{0} : a + b; }

}  // namespace

const char* FaultKindName(FaultKind kind) {
  switch (kind) {
    case FaultKind::kStall:
      return "stall";
    case FaultKind::kSlow:
      return "slow";
    case FaultKind::kMediaError:
      return "media_error";
    case FaultKind::kTimeout:
      return "timeout";
    case FaultKind::kReset:
      return "reset";
  }
  return "unknown";
}

const char* FaultTriggerName(FaultTrigger trigger) {
  switch (trigger) {
    case FaultTrigger::kAt:
      return "at_ms";
    case FaultTrigger::kAfterRequests:
      return "after_requests";
    case FaultTrigger::kProbability:
      return "probability";
  }
  return "unknown";
}

double FaultPick(std::uint64_t seed, std::size_t index, std::uint64_t number) {
  const auto mix = [](std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  const std::uint64_t stream =
      mix((seed ^ 0x6661756c74ULL) + 0x9e3779b97f4a7c15ULL * (std::uint64_t{index} + 1));
  return static_cast<double>(mix(stream ^ number) >> 11) * 0x1.0p-53;
}

FaultSchedule::FaultSchedule(std::vector<Fault> faults, std::uint64_t seed)
    : faults_(std::move(faults)),
      seed_(seed),
      affected_(faults_.size(), 0),
      ended_ns_(faults_.size()),
      triggered_(faults_.size()),
      first_(faults_.size()),
      picks_(faults_.size()) {
  for (std::size_t i = 0; i < faults_.size(); ++i) {
    if (faults_[i].kind == FaultKind::kStall) stall_order_.push_back(i);
    if (faults_[i].kind == FaultKind::kReset) resets_.push_back(i);
    if (faults_[i].trigger == FaultTrigger::kAfterRequests) after_.push_back(i);
    // Count() lists picks on the submit path, which must not allocate.
    if (faults_[i].trigger == FaultTrigger::kProbability) picks_[i].reserve(kMaxListedPicks);
  }
  SortStalls();
}

void FaultSchedule::SetOrigin(TimeNs origin_ns) {
  origin_ = origin_ns;
  arrived_ = 0;
  SortStalls();
}

std::optional<TimeNs> FaultSchedule::Start(std::size_t i) const {
  if (!origin_) return std::nullopt;
  const Fault& f = faults_[i];
  switch (f.trigger) {
    case FaultTrigger::kAt:
      return AddSat(*origin_, f.at_ns);
    case FaultTrigger::kAfterRequests:
      if (!triggered_[i]) return std::nullopt;
      return triggered_[i]->ns;
    case FaultTrigger::kProbability:
      return *origin_;
  }
  return std::nullopt;
}

TimeNs FaultSchedule::End(std::size_t i, TimeNs start) const {
  const TimeNs d = faults_[i].duration_ns;
  return d == kForever ? kForever : AddSat(start, d);
}

bool FaultSchedule::Holds(std::size_t i, TimeNs t) const {
  const std::optional<TimeNs> s = Start(i);
  return s && t >= *s && t < End(i, *s);
}

void FaultSchedule::SortStalls() {
  const auto key = [this](std::size_t i) { return Start(i).value_or(kForever); };
  std::stable_sort(stall_order_.begin(), stall_order_.end(),
                   [&key](std::size_t a, std::size_t b) { return key(a) < key(b); });
}

std::uint64_t FaultSchedule::Arrive(TimeNs submit_ns) {
  if (!origin_ || submit_ns < *origin_) return 0;
  const std::uint64_t number = ++arrived_;
  if (after_.empty()) return number;
  bool started = false;
  for (auto it = after_.begin(); it != after_.end();) {
    if (faults_[*it].after_requests + 1 == number) {
      triggered_[*it] = Seen{number, submit_ns};
      started = started || faults_[*it].kind == FaultKind::kStall;
      it = after_.erase(it);
    } else {
      ++it;
    }
  }
  if (started) SortStalls();
  return number;
}

void FaultSchedule::Count(std::size_t i, std::uint64_t number, TimeNs submit_ns) {
  ++affected_[i];
  if (!first_[i]) first_[i] = Seen{number, submit_ns};
  if (faults_[i].trigger == FaultTrigger::kProbability && picks_[i].size() < kMaxListedPicks) {
    picks_[i].push_back(Seen{number, submit_ns});
  }
}

int FaultSchedule::PendingReset() const {
  int best = -1;
  TimeNs best_start = 0;
  for (std::size_t i : resets_) {
    if (ended_ns_[i]) continue;
    const std::optional<TimeNs> s = Start(i);
    if (!s) continue;
    if (best < 0 || *s < best_start) {
      best = static_cast<int>(i);
      best_start = *s;
    }
  }
  return best;
}

int FaultSchedule::LostToReset(TimeNs deadline_ns, std::uint64_t number, TimeNs submit_ns) {
  const int i = PendingReset();
  if (i < 0 || deadline_ns < *Start(static_cast<std::size_t>(i))) return -1;
  Count(static_cast<std::size_t>(i), number, submit_ns);
  return i;
}

bool FaultSchedule::Failed(TimeNs now_ns) const {
  const int i = PendingReset();
  return i >= 0 && now_ns >= *Start(static_cast<std::size_t>(i));
}

bool FaultSchedule::HostReset(TimeNs now_ns) {
  if (origin_) ++host_resets_;  // before it: the machine's own (boot, restore)
  bool ended = false;
  while (Failed(now_ns)) {
    ended_ns_[static_cast<std::size_t>(PendingReset())] = now_ns;
    ended = true;
  }
  return ended;
}

bool FaultSchedule::Touches(const Fault& f, const Request& r, std::uint32_t block_bytes) const {
  if (r.op == Op::kWrite && !f.writes) return false;
  if (f.lba_count == 0) return f.kind == FaultKind::kTimeout ||
                               f.trigger == FaultTrigger::kProbability;  // every block
  const std::uint64_t first = r.offset_bytes / block_bytes;
  const std::uint64_t last = (r.offset_bytes + r.length_bytes - 1) / block_bytes;
  return !(last < f.lba_start || (first >= f.lba_start && first - f.lba_start >= f.lba_count));
}

FaultSchedule::Verdict FaultSchedule::Classify(const Request& r, TimeNs submit_ns,
                                               std::uint64_t number, std::uint32_t block_bytes) {
  Verdict v;
  if (!origin_ || faults_.empty() || block_bytes == 0) return v;
  if (r.op != Op::kRead && r.op != Op::kWrite) return v;
  if (r.length_bytes == 0) return v;
  for (std::size_t i = 0; i < faults_.size() && v.lost < 0; ++i) {
    const Fault& f = faults_[i];
    const bool timeout = f.kind == FaultKind::kTimeout;
    if (!timeout && (f.kind != FaultKind::kMediaError || v.media_error >= 0)) continue;
    if (!Holds(i, submit_ns) || !Touches(f, r, block_bytes)) continue;
    if (f.trigger == FaultTrigger::kProbability &&
        (number == 0 || !(FaultPick(seed_, i, number) < f.probability))) {
      continue;
    }
    (timeout ? v.lost : v.media_error) = static_cast<int>(i);
  }
  if (v.lost >= 0) {
    v.media_error = -1;
    Count(static_cast<std::size_t>(v.lost), number, submit_ns);
  } else if (v.media_error >= 0) {
    Count(static_cast<std::size_t>(v.media_error), number, submit_ns);
  }
  return v;
}

std::uint64_t FaultSchedule::RateFactorPpm(TimeNs submit_ns, std::uint64_t number) {
  std::uint64_t ppm = 1000000;
  if (!origin_ || faults_.empty()) return ppm;
  for (std::size_t i = 0; i < faults_.size(); ++i) {
    if (faults_[i].kind != FaultKind::kSlow || !Holds(i, submit_ns)) continue;
    const unsigned __int128 p =
        static_cast<unsigned __int128>(ppm) * faults_[i].factor_ppm / 1000000u;
    ppm = p > (~std::uint64_t{0} >> 1) ? (~std::uint64_t{0} >> 1) : static_cast<std::uint64_t>(p);
    Count(i, number, submit_ns);
  }
  return ppm;
}

TimeNs FaultSchedule::Apply(TimeNs submit_ns, TimeNs deadline_ns, std::uint64_t number) {
  if (!origin_ || faults_.empty()) return deadline_ns;
  TimeNs d = std::max(deadline_ns, submit_ns);
  for (std::size_t i = 0; i < faults_.size() && !slow_lowers_rate_; ++i) {
    const Fault& f = faults_[i];
    if (f.kind != FaultKind::kSlow || !Holds(i, submit_ns)) continue;
    const unsigned __int128 scaled =
        static_cast<unsigned __int128>(d - submit_ns) * f.factor_ppm / 1000000u;
    d = scaled > ~TimeNs{0} - submit_ns ? ~TimeNs{0} : submit_ns + static_cast<TimeNs>(scaled);
    Count(i, number, submit_ns);
  }
  for (std::size_t i : stall_order_) {
    if (!Holds(i, d)) continue;
    d = End(i, *Start(i));
    Count(i, number, submit_ns);
  }
  return d;
}

std::string FaultSchedule::AddCounters(const std::string& json_object) const {
  nlohmann::json j = nlohmann::json::parse(json_object);
  j["fault_origin_ns"] = origin_ ? nlohmann::json(*origin_) : nlohmann::json(nullptr);
  j["host_resets"] = host_resets_;
  j["requests_since_origin"] = arrived_;
  const auto seen = [](const std::optional<Seen>& s) {
    return s ? nlohmann::json{{"request", s->request}, {"ns", s->ns}} : nlohmann::json(nullptr);
  };
  nlohmann::json list = nlohmann::json::array();
  for (std::size_t i = 0; i < faults_.size(); ++i) {
    const Fault& f = faults_[i];
    nlohmann::json one;
    one["kind"] = FaultKindName(f.kind);
    one["trigger"] = FaultTriggerName(f.trigger);
    one["at_ns"] = f.trigger == FaultTrigger::kAt ? nlohmann::json(f.at_ns) : nlohmann::json(nullptr);
    if (f.trigger == FaultTrigger::kAfterRequests) one["after_requests"] = f.after_requests;
    if (f.trigger == FaultTrigger::kProbability) one["probability"] = f.probability;
    one["duration_ns"] = f.duration_ns;
    if (f.duration_ns == kForever) one["duration_ns"] = nullptr;
    const std::optional<TimeNs> s = Start(i);
    one["start_ns"] = s ? nlohmann::json(*s) : nlohmann::json(nullptr);
    one["end_ns"] = s && End(i, *s) != kForever ? nlohmann::json(End(i, *s))
                                                 : nlohmann::json(nullptr);
    if (f.kind == FaultKind::kReset) {  // it lasts until the host resets the device
      one["end_ns"] = ended_ns_[i] ? nlohmann::json(*ended_ns_[i]) : nlohmann::json(nullptr);
      one["duration_ns"] = ended_ns_[i] && s
                               ? nlohmann::json(*ended_ns_[i] - std::min(*ended_ns_[i], *s))
                               : nlohmann::json(nullptr);
    }
    if (f.kind == FaultKind::kSlow) one["factor"] = static_cast<double>(f.factor_ppm) / 1e6;
    if (f.kind == FaultKind::kSlow && slow_lowers_rate_) one["lowers_rate_limit"] = true;
    if (f.kind == FaultKind::kMediaError || f.kind == FaultKind::kTimeout) {
      one["lba_start"] = f.lba_start;
      one["lba_count"] = f.lba_count;
      one["writes"] = f.writes;
    }
    if (f.kind == FaultKind::kMediaError) one["retry_ns"] = f.retry_ns;
    one["requests"] = affected_[i];
    one["first_request"] = seen(first_[i]);
    if (f.trigger == FaultTrigger::kAfterRequests) one["trigger_request"] = seen(triggered_[i]);
    if (f.trigger == FaultTrigger::kProbability) {
      nlohmann::json picks = nlohmann::json::array();
      for (const Seen& p : picks_[i]) picks.push_back(seen(p));
      one["picks"] = picks;
    }
    list.push_back(one);
  }
  j["faults"] = list;
  return j.dump();
}

std::uint64_t FaultSchedule::MemoryBytes() const {
  std::uint64_t bytes = faults_.size() * (sizeof(Fault) + 2 * sizeof(std::uint64_t) +
                                          3 * sizeof(std::optional<Seen>) +
                                          sizeof(std::vector<Seen>));
  for (const auto& p : picks_) bytes += p.capacity() * sizeof(Seen);
  return bytes;
}

FaultyDevice::FaultyDevice(std::unique_ptr<Device> inner, FaultSchedule schedule)
    : inner_(std::move(inner)), schedule_(std::move(schedule)) {
  schedule_.set_slow_lowers_rate(inner_->ScaleRateLimit(1000000));
}

bool FaultyDevice::SaveState(std::string* out, std::string* why) const {
  if (submitted_.size() != 0) {
    *why = std::to_string(submitted_.size()) + " request(s) not final yet";
    return false;
  }
  if (!lost_.empty()) {
    *why = std::to_string(lost_.size()) + " lost request(s) not cancelled yet";
    return false;
  }
  return inner_->SaveState(out, why);
}

bool FaultyDevice::LoadState(internal::StateReader* in, std::string* why) {
  return inner_->LoadState(in, why);
}

void FaultyDevice::SetInnerClockOffset(TimeNs offset) {
  if (offset != 0) inner_ = std::make_unique<internal::ShiftedClockDevice>(std::move(inner_), offset);
}

FaultyDevice* FaultyDevice::Of(Device* device) { return dynamic_cast<FaultyDevice*>(device); }

Completion FaultyDevice::Finish(std::uint64_t tag, Completion c, const Pending& p, TimeNs now) {
  TimeNs d = std::max(c.deadline_ns, now);
  const bool lost = p.verdict.lost >= 0;
  if (!lost) {
    if (p.verdict.media_error >= 0) {
      d = AddSat(d, schedule_.faults()[static_cast<std::size_t>(p.verdict.media_error)].retry_ns);
      c.status = Status::kMediaError;
    }
    d = schedule_.Apply(p.submit_ns, d, p.number);
  }
  c.deadline_ns = d;
  if (lost || schedule_.LostToReset(d, p.number, p.submit_ns) >= 0) {
    c.status = Status::kLost;
    lost_.insert(tag);
  }
  return c;
}

Completion FaultyDevice::Submit(const Request& r, TimeNs now) {
  const std::uint64_t number = schedule_.Arrive(now);
  if (schedule_.slow_lowers_rate()) {
    const std::uint64_t ppm = schedule_.RateFactorPpm(now, number);
    if (ppm != rate_factor_ppm_) {
      inner_->ScaleRateLimit(ppm);
      rate_factor_ppm_ = ppm;
    }
  }
  Completion c = inner_->Submit(r, now);
  const Pending p{now, number, schedule_.Classify(r, now, number, inner_->logical_block_bytes())};
  if (!c.final) {
    submitted_.Put(r.tag, p);
    return c;
  }
  return Finish(r.tag, c, p, now);
}

Completion FaultyDevice::Poll(std::uint64_t tag, TimeNs now) {
  Completion c = inner_->Poll(tag, now);
  auto it = submitted_.find(tag);
  if (c.final && it != submitted_.end()) {  // an unknown tag stays {now, true}
    Pending p = it->second;
    submitted_.Erase(it);
    p.submit_ns = std::min(p.submit_ns, now);
    return Finish(tag, c, p, now);
  }
  return c;
}

bool FaultyDevice::Cancel(std::uint64_t tag) {
  inner_->Cancel(tag);
  const bool had = submitted_.Erase(tag) + lost_.erase(tag) > 0;
  if (had) ++cancelled_;
  return had;
}

std::string FaultyDevice::CountersJson() const {
  nlohmann::json j = nlohmann::json::parse(schedule_.AddCounters(inner_->CountersJson()));
  j["cancelled"] = cancelled_;
  j["lost_held"] = lost_.size();
  return j.dump();
}

std::uint64_t FaultyDevice::MemoryBytes() const {
  return sizeof(*this) + inner_->MemoryBytes() +
         submitted_.MemoryBytes() +
         lost_.size() * (sizeof(std::uint64_t) + 2 * sizeof(void*)) +
         schedule_.MemoryBytes();
}

}  // namespace devmodel

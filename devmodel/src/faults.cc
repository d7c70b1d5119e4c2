#include "devmodel/faults.h"

#include <algorithm>
#include <nlohmann/json.hpp>

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

FaultSchedule::FaultSchedule(std::vector<Fault> faults)
    : faults_(std::move(faults)), affected_(faults_.size(), 0), ended_ns_(faults_.size()) {
  for (std::size_t i = 0; i < faults_.size(); ++i) {
    if (faults_[i].kind == FaultKind::kStall) stall_order_.push_back(i);
    if (faults_[i].kind == FaultKind::kReset) reset_order_.push_back(i);
  }
  const auto by_start = [this](std::size_t a, std::size_t b) {
    return faults_[a].at_ns < faults_[b].at_ns;
  };
  std::stable_sort(stall_order_.begin(), stall_order_.end(), by_start);
  std::stable_sort(reset_order_.begin(), reset_order_.end(), by_start);
}

std::optional<TimeNs> FaultSchedule::ResetStart(std::size_t i) const {
  if (!origin_) return std::nullopt;
  return AddSat(*origin_, faults_[i].at_ns);
}

int FaultSchedule::PendingReset() const {
  if (!origin_ || resets_ended_ >= reset_order_.size()) return -1;
  return static_cast<int>(reset_order_[resets_ended_]);
}

int FaultSchedule::LostToReset(TimeNs deadline_ns) {
  const int i = PendingReset();
  if (i < 0 || deadline_ns < *ResetStart(static_cast<std::size_t>(i))) return -1;
  ++affected_[static_cast<std::size_t>(i)];
  return i;
}

bool FaultSchedule::Failed(TimeNs now_ns) const {
  const int i = PendingReset();
  return i >= 0 && now_ns >= *ResetStart(static_cast<std::size_t>(i));
}

bool FaultSchedule::HostReset(TimeNs now_ns) {
  if (origin_) ++host_resets_;  // before it: the machine's own (boot, restore)
  bool ended = false;
  while (Failed(now_ns)) {
    ended_ns_[reset_order_[resets_ended_]] = now_ns;
    ++resets_ended_;
    ended = true;
  }
  return ended;
}

int FaultSchedule::MediaError(const Request& r, TimeNs submit_ns, std::uint32_t block_bytes) {
  return Match(FaultKind::kMediaError, r, submit_ns, block_bytes);
}

int FaultSchedule::Lost(const Request& r, TimeNs submit_ns, std::uint32_t block_bytes) {
  return Match(FaultKind::kTimeout, r, submit_ns, block_bytes);
}

int FaultSchedule::Match(FaultKind kind, const Request& r, TimeNs submit_ns,
                         std::uint32_t block_bytes) {
  if (!origin_ || faults_.empty() || block_bytes == 0) return -1;
  if (r.op != Op::kRead && r.op != Op::kWrite) return -1;
  if (r.length_bytes == 0) return -1;
  const std::uint64_t first = r.offset_bytes / block_bytes;
  const std::uint64_t last = (r.offset_bytes + r.length_bytes - 1) / block_bytes;
  for (std::size_t i = 0; i < faults_.size(); ++i) {
    const Fault& f = faults_[i];
    if (f.kind != kind || (r.op == Op::kWrite && !f.writes)) continue;
    const TimeNs s = AddSat(*origin_, f.at_ns), e = AddSat(s, f.duration_ns);
    if (submit_ns < s || (f.duration_ns != kForever && submit_ns >= e)) continue;
    const bool whole_device = f.kind == FaultKind::kTimeout && f.lba_count == 0;
    if (!whole_device &&
        (last < f.lba_start || (first >= f.lba_start && first - f.lba_start >= f.lba_count))) {
      continue;
    }
    ++affected_[i];
    return static_cast<int>(i);
  }
  return -1;
}

TimeNs FaultSchedule::Apply(TimeNs submit_ns, TimeNs deadline_ns) {
  if (!origin_ || faults_.empty()) return deadline_ns;
  TimeNs d = std::max(deadline_ns, submit_ns);
  for (std::size_t i = 0; i < faults_.size(); ++i) {
    const Fault& f = faults_[i];
    const TimeNs s = AddSat(*origin_, f.at_ns), e = AddSat(s, f.duration_ns);
    if (f.kind != FaultKind::kSlow || submit_ns < s || submit_ns >= e) continue;
    const unsigned __int128 scaled =
        static_cast<unsigned __int128>(d - submit_ns) * f.factor_ppm / 1000000u;
    d = scaled > ~TimeNs{0} - submit_ns ? ~TimeNs{0} : submit_ns + static_cast<TimeNs>(scaled);
    ++affected_[i];
  }
  for (std::size_t i : stall_order_) {
    const Fault& f = faults_[i];
    const TimeNs s = AddSat(*origin_, f.at_ns), e = AddSat(s, f.duration_ns);
    if (d < s || d >= e) continue;
    d = e;
    ++affected_[i];
  }
  return d;
}

std::string FaultSchedule::AddCounters(const std::string& json_object) const {
  nlohmann::json j = nlohmann::json::parse(json_object);
  j["fault_origin_ns"] = origin_ ? nlohmann::json(*origin_) : nlohmann::json(nullptr);
  j["host_resets"] = host_resets_;
  nlohmann::json list = nlohmann::json::array();
  for (std::size_t i = 0; i < faults_.size(); ++i) {
    const Fault& f = faults_[i];
    nlohmann::json one;
    one["kind"] = FaultKindName(f.kind);
    one["at_ns"] = f.at_ns;
    one["duration_ns"] = f.duration_ns;
    if (f.duration_ns == kForever) one["duration_ns"] = nullptr;
    if (origin_) {
      one["start_ns"] = AddSat(*origin_, f.at_ns);
      one["end_ns"] = f.duration_ns == kForever
                          ? nlohmann::json(nullptr)
                          : nlohmann::json(AddSat(AddSat(*origin_, f.at_ns), f.duration_ns));
    } else {
      one["start_ns"] = nullptr;
      one["end_ns"] = nullptr;
    }
    if (f.kind == FaultKind::kReset) {  // it lasts until the host resets the device
      one["end_ns"] = ended_ns_[i] ? nlohmann::json(*ended_ns_[i]) : nlohmann::json(nullptr);
      one["duration_ns"] = ended_ns_[i] && origin_
                               ? nlohmann::json(*ended_ns_[i] -
                                                std::min(*ended_ns_[i], AddSat(*origin_, f.at_ns)))
                               : nlohmann::json(nullptr);
    }
    if (f.kind == FaultKind::kSlow) one["factor"] = static_cast<double>(f.factor_ppm) / 1e6;
    if (f.kind == FaultKind::kMediaError || f.kind == FaultKind::kTimeout) {
      one["lba_start"] = f.lba_start;
      one["lba_count"] = f.lba_count;
      one["writes"] = f.writes;
    }
    if (f.kind == FaultKind::kMediaError) one["retry_ns"] = f.retry_ns;
    one["requests"] = affected_[i];
    list.push_back(one);
  }
  j["faults"] = list;
  return j.dump();
}

FaultyDevice::FaultyDevice(std::unique_ptr<Device> inner, FaultSchedule schedule)
    : inner_(std::move(inner)), schedule_(std::move(schedule)) {}

FaultyDevice* FaultyDevice::Of(Device* device) { return dynamic_cast<FaultyDevice*>(device); }

Completion FaultyDevice::Finish(std::uint64_t tag, Completion c, TimeNs submit_ns,
                                int media_error, int lost, TimeNs now) {
  TimeNs d = std::max(c.deadline_ns, now);
  if (lost < 0) {
    if (media_error >= 0) {
      d = AddSat(d, schedule_.faults()[static_cast<std::size_t>(media_error)].retry_ns);
      c.status = Status::kMediaError;
    }
    d = schedule_.Apply(submit_ns, d);
  }
  c.deadline_ns = d;
  if (lost >= 0 || schedule_.LostToReset(d) >= 0) {
    c.status = Status::kLost;
    lost_.insert(tag);
  }
  return c;
}

Completion FaultyDevice::Submit(const Request& r, TimeNs now) {
  Completion c = inner_->Submit(r, now);
  const std::uint32_t block = inner_->logical_block_bytes();
  const int lost = schedule_.Lost(r, now, block);
  const int media_error = lost >= 0 ? -1 : schedule_.MediaError(r, now, block);
  if (!c.final) {
    submitted_.Put(r.tag, {now, media_error, lost});
    return c;
  }
  return Finish(r.tag, c, now, media_error, lost, now);
}

Completion FaultyDevice::Poll(std::uint64_t tag, TimeNs now) {
  Completion c = inner_->Poll(tag, now);
  auto it = submitted_.find(tag);
  if (c.final && it != submitted_.end()) {  // an unknown tag stays {now, true}
    const Pending p = it->second;
    submitted_.Erase(it);
    return Finish(tag, c, std::min(p.submit_ns, now), p.media_error, p.lost, now);
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
         schedule_.faults().size() * (sizeof(Fault) + 2 * sizeof(std::uint64_t));
}

}  // namespace devmodel

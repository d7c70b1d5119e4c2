#include "devmodel/faults.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace devmodel {
namespace {

// a + b, saturating (a guest that warps the clock gets no wrap-around).
TimeNs AddSat(TimeNs a, TimeNs b) { return b > ~TimeNs{0} - a ? ~TimeNs{0} : a + b; }

}  // namespace

const char* FaultKindName(FaultKind kind) {
  return kind == FaultKind::kStall ? "stall" : "slow";
}

FaultSchedule::FaultSchedule(std::vector<Fault> faults)
    : faults_(std::move(faults)), affected_(faults_.size(), 0) {
  for (std::size_t i = 0; i < faults_.size(); ++i) {
    if (faults_[i].kind == FaultKind::kStall) stall_order_.push_back(i);
  }
  std::stable_sort(stall_order_.begin(), stall_order_.end(),
                   [this](std::size_t a, std::size_t b) {
                     return faults_[a].at_ns < faults_[b].at_ns;
                   });
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
  nlohmann::json list = nlohmann::json::array();
  for (std::size_t i = 0; i < faults_.size(); ++i) {
    const Fault& f = faults_[i];
    nlohmann::json one;
    one["kind"] = FaultKindName(f.kind);
    one["at_ns"] = f.at_ns;
    one["duration_ns"] = f.duration_ns;
    if (origin_) {
      one["start_ns"] = AddSat(*origin_, f.at_ns);
      one["end_ns"] = AddSat(AddSat(*origin_, f.at_ns), f.duration_ns);
    } else {
      one["start_ns"] = nullptr;
      one["end_ns"] = nullptr;
    }
    if (f.kind == FaultKind::kSlow) one["factor"] = static_cast<double>(f.factor_ppm) / 1e6;
    one["requests"] = affected_[i];
    list.push_back(one);
  }
  j["faults"] = list;
  return j.dump();
}

FaultyDevice::FaultyDevice(std::unique_ptr<Device> inner, FaultSchedule schedule)
    : inner_(std::move(inner)), schedule_(std::move(schedule)) {}

FaultyDevice* FaultyDevice::Of(Device* device) { return dynamic_cast<FaultyDevice*>(device); }

Completion FaultyDevice::Submit(const Request& r, TimeNs now) {
  Completion c = inner_->Submit(r, now);
  if (!c.final) {
    submitted_[r.tag] = now;
  } else {
    c.deadline_ns = schedule_.Apply(now, std::max(c.deadline_ns, now));
  }
  return c;
}

Completion FaultyDevice::Poll(std::uint64_t tag, TimeNs now) {
  Completion c = inner_->Poll(tag, now);
  auto it = submitted_.find(tag);
  if (c.final && it != submitted_.end()) {  // an unknown tag stays {now, true}
    c.deadline_ns = schedule_.Apply(std::min(it->second, now), std::max(c.deadline_ns, now));
    submitted_.erase(it);
  }
  return c;
}

std::string FaultyDevice::CountersJson() const {
  return schedule_.AddCounters(inner_->CountersJson());
}

std::uint64_t FaultyDevice::MemoryBytes() const {
  return sizeof(*this) + inner_->MemoryBytes() +
         submitted_.size() * (sizeof(std::uint64_t) + sizeof(TimeNs) + 2 * sizeof(void*)) +
         schedule_.faults().size() * (sizeof(Fault) + 2 * sizeof(std::uint64_t));
}

}  // namespace devmodel

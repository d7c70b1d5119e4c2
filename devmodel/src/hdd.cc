#include "devmodel/hdd.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <queue>
#include <unordered_map>

#include "hdd_geometry.h"
#include "hdd_segments.h"
#include "model_state.h"

namespace devmodel {
namespace {

using internal::HddGeometry;
using internal::HddPosition;
using internal::HddZone;

constexpr std::uint64_t kNever = ~0ull;
// A transfer may start this much after its first sector passed the head: it
// absorbs ns rounding so back-to-back sequential transfers stay continuous.
constexpr std::uint64_t kSlackPs = 2000;

class HddModel final : public Device {
 public:
  HddModel(const HddConfig& c, HddGeometry geometry)
      : c_(c),
        g_(std::move(geometry)),
        segments_(std::max<std::uint32_t>(1, c.cache_segments)),
        index_(static_cast<std::uint32_t>(segments_.size()), g_.total_sectors()),
        ra_sectors_(c.read_ahead_bytes / c.logical_block_bytes) {
    queue_.reserve(64);
  }

  Completion Submit(const Request& r, TimeNs now) override;
  Completion Poll(std::uint64_t tag, TimeNs now) override;
  bool Cancel(std::uint64_t tag) override;
  bool deadlines_final() const override { return c_.queue_policy == QueuePolicy::kFifo; }
  std::uint64_t capacity_bytes() const override { return c_.capacity_bytes; }
  std::uint32_t logical_block_bytes() const override { return c_.logical_block_bytes; }
  std::uint32_t rotation_rate_rpm() const override { return c_.rpm; }
  std::string CountersJson() const override;
  bool SaveState(std::string* out, std::string* why) const override;
  bool LoadState(internal::StateReader* in, std::string* why) override;
  std::uint64_t MemoryBytes() const override {
    return sizeof(*this) + segments_.capacity() * sizeof(Segment) + index_.MemoryBytes() +
           queue_.capacity() * sizeof(Cmd) + done_.size() * 32;
  }

 private:
  struct Cmd {
    std::uint64_t tag, lba, seq;
    std::uint32_t sectors;
    bool write, destage;
    bool cancelled;  // the host took it back: served, but never reported
    TimeNs arrival;
  };
  struct Plan {
    std::uint64_t begin_ps, end_ps;
    TimeNs end_ns;
    std::uint64_t position_ns, seek_ns;
    std::uint32_t end_cylinder, end_head, end_zone, distance;
  };
  struct Segment {
    bool valid = false;
    std::uint64_t start = 0, end = 0, ra_limit = 0;  // sectors
    TimeNs ready_ns = 0;
    std::uint64_t ra_begin_ps = 0, ra_stop_ps = kNever;
    std::uint32_t zone = 0;
  };
  struct PendingFlush {
    std::uint64_t tag, seq_bound, remaining;
  };

  Plan MakePlan(const Cmd& cmd, TimeNs t) const;
  void Advance(TimeNs limit);
  void Service(std::size_t index, TimeNs t);
  bool ReadFromCache(std::uint64_t lba, std::uint64_t end, TimeNs t, TimeNs* ready);
  std::uint64_t RaReachPs(const Segment& s, std::uint64_t lba) const;
  void InvalidateSegments(std::uint64_t lba, std::uint64_t end);
  // Keeps index_ in step with segment `i` (after start, end, ra_limit or
  // valid change).
  void SyncSegment(std::size_t i) {
    const Segment& s = segments_[i];
    index_.Set(static_cast<std::uint32_t>(i), s.start, s.valid ? std::max(s.end, s.ra_limit) : 0);
  }
  void ReleaseDirty(TimeNs t);
  TimeNs NextDecision() const;
  TimeNs InterfaceNs(std::uint64_t bytes) const {
    return c_.interface_mb_s == 0 ? 0 : (bytes * 1000 + c_.interface_mb_s - 1) / c_.interface_mb_s;
  }

  HddConfig c_;
  HddGeometry g_;
  std::vector<Segment> segments_;
  // Ranges served by each segment (start, max(end, ra_limit)) and the
  // replacement order; a segment can concern a request only if its range does.
  internal::HddSegmentIndex index_;
  std::uint64_t ra_sectors_;
  std::size_t active_segment_ = kNever;

  std::vector<Cmd> queue_;  // arrival order; at most the host's queue depth
  TimeNs mech_free_ = 0;
  std::uint32_t head_cylinder_ = 0, head_ = 0;
  TimeNs last_host_done_ = 0;
  std::unordered_map<std::uint64_t, TimeNs> done_;  // SPTF: decided completions
  std::vector<PendingFlush> flushes_;
  std::uint64_t dirty_bytes_ = 0;
  using Release = std::pair<TimeNs, std::uint64_t>;
  std::priority_queue<Release, std::vector<Release>, std::greater<>> releases_;
  std::uint64_t destage_seq_ = 0;
  TimeNs last_destage_done_ = 0;

  struct Counters {
    std::uint64_t reads = 0, writes = 0, flushes = 0, trims = 0;
    std::uint64_t cache_read_hits = 0, read_ahead_hits = 0, write_cache_absorbed = 0;
    std::uint64_t destages = 0, media_commands = 0, seeks = 0, seek_cylinders = 0;
    std::uint64_t seek_ns = 0, rotational_wait_ns = 0, media_busy_ns = 0;
    std::uint64_t queue_depth_max = 0, sptf_aged_picks = 0;
  } n_;
};

// Every field of the model that a later request can see (model_state.h);
// the geometry and configuration come from the profile.
#define DEVMODEL_HDD_COUNTERS(X)                                                          \
  X(reads) X(writes) X(flushes) X(trims) X(cache_read_hits) X(read_ahead_hits)           \
  X(write_cache_absorbed) X(destages) X(media_commands) X(seeks) X(seek_cylinders)        \
  X(seek_ns) X(rotational_wait_ns) X(media_busy_ns) X(queue_depth_max) X(sptf_aged_picks)

bool HddModel::SaveState(std::string* out, std::string* /*why*/) const {
  internal::StateWriter w(out);
  w.Put(segments_.size());
  for (const Segment& sg : segments_) {
    for (std::uint64_t v : {std::uint64_t{sg.valid}, sg.start, sg.end, sg.ra_limit, sg.ready_ns,
                            sg.ra_begin_ps, sg.ra_stop_ps, std::uint64_t{sg.zone}}) {
      w.Put(v);
    }
  }
  const std::vector<std::uint32_t> lru = index_.LruOrder();
  w.Put(lru.size());
  for (std::uint32_t i : lru) w.Put(i);
  w.Put(active_segment_);
  w.Put(queue_.size());
  for (const Cmd& cmd : queue_) {
    for (std::uint64_t v : {cmd.tag, cmd.lba, cmd.seq, std::uint64_t{cmd.sectors},
                            std::uint64_t{cmd.write}, std::uint64_t{cmd.destage},
                            std::uint64_t{cmd.cancelled}, cmd.arrival}) {
      w.Put(v);
    }
  }
  for (std::uint64_t v : {mech_free_, std::uint64_t{head_cylinder_}, std::uint64_t{head_},
                          last_host_done_}) {
    w.Put(v);
  }
  std::vector<std::pair<std::uint64_t, TimeNs>> done(done_.begin(), done_.end());
  std::sort(done.begin(), done.end());  // the same bytes whatever the hash order
  w.Put(done.size());
  for (const auto& [tag, t] : done) {
    w.Put(tag);
    w.Put(t);
  }
  w.Put(flushes_.size());
  for (const PendingFlush& f : flushes_) {
    for (std::uint64_t v : {f.tag, f.seq_bound, f.remaining}) w.Put(v);
  }
  w.Put(dirty_bytes_);
  auto releases = releases_;
  w.Put(releases.size());
  for (; !releases.empty(); releases.pop()) {
    w.Put(releases.top().first);
    w.Put(releases.top().second);
  }
  w.Put(destage_seq_);
  w.Put(last_destage_done_);
#define DEVMODEL_PUT(name) w.Put(n_.name);
  DEVMODEL_HDD_COUNTERS(DEVMODEL_PUT)
#undef DEVMODEL_PUT
  return true;
}

bool HddModel::LoadState(internal::StateReader* in, std::string* why) {
  auto fail = [why](const char* what) {
    *why = std::string("HDD state: ") + what;
    return false;
  };
  if (in->Get() != segments_.size()) return fail("segment count differs from the profile's");
  for (Segment& sg : segments_) {
    sg.valid = in->Get() != 0;
    for (std::uint64_t* v : {&sg.start, &sg.end, &sg.ra_limit, &sg.ready_ns, &sg.ra_begin_ps,
                             &sg.ra_stop_ps}) {
      *v = in->Get();
    }
    const std::uint64_t zone = in->Get();
    if (zone >= g_.zones().size() || sg.start > sg.end || sg.end > g_.total_sectors() ||
        sg.ra_limit > g_.total_sectors() || (sg.valid && sg.start == sg.end)) {
      return fail("a cache segment outside the disk");
    }
    sg.zone = static_cast<std::uint32_t>(zone);
  }
  const std::uint64_t valid =
      static_cast<std::uint64_t>(std::count_if(segments_.begin(), segments_.end(),
                                               [](const Segment& sg) { return sg.valid; }));
  const std::uint64_t lru_count = in->GetCount();
  if (lru_count != valid) return fail("segment order differs from the valid segments");
  std::vector<bool> seen(segments_.size(), false);
  for (std::uint64_t k = 0; k < lru_count; ++k) {
    const std::uint64_t i = in->Get();
    if (i >= segments_.size() || !segments_[i].valid || seen[i]) return fail("bad segment order");
    seen[i] = true;
    SyncSegment(i);  // valid from now on, most recently used: the saved order
  }
  active_segment_ = in->Get();
  if (active_segment_ != kNever && active_segment_ >= segments_.size()) {
    return fail("bad active segment");
  }
  const std::uint64_t queued = in->GetCount(8);
  queue_.clear();
  for (std::uint64_t k = 0; k < queued; ++k) {
    Cmd cmd{};
    cmd.tag = in->Get();
    cmd.lba = in->Get();
    cmd.seq = in->Get();
    const std::uint64_t sectors = in->Get();
    cmd.write = in->Get() != 0;
    cmd.destage = in->Get() != 0;
    cmd.cancelled = in->Get() != 0;
    cmd.arrival = in->Get();
    if (sectors == 0 || cmd.lba >= g_.total_sectors() || sectors > g_.total_sectors() - cmd.lba) {
      return fail("a queued command outside the disk");
    }
    cmd.sectors = static_cast<std::uint32_t>(sectors);
    queue_.push_back(cmd);
  }
  mech_free_ = in->Get();
  const std::uint64_t cylinder = in->Get(), head = in->Get();
  if (cylinder >= g_.cylinders() || head >= c_.heads) return fail("head position outside the disk");
  head_cylinder_ = static_cast<std::uint32_t>(cylinder);
  head_ = static_cast<std::uint32_t>(head);
  last_host_done_ = in->Get();
  done_.clear();
  for (std::uint64_t k = 0, n = in->GetCount(2); k < n; ++k) {
    const std::uint64_t tag = in->Get();
    done_[tag] = in->Get();
  }
  flushes_.clear();
  for (std::uint64_t k = 0, n = in->GetCount(3); k < n; ++k) {
    PendingFlush f{};
    f.tag = in->Get();
    f.seq_bound = in->Get();
    f.remaining = in->Get();
    flushes_.push_back(f);
  }
  dirty_bytes_ = in->Get();
  releases_ = {};
  for (std::uint64_t k = 0, n = in->GetCount(2); k < n; ++k) {
    const TimeNs t = in->Get();
    releases_.emplace(t, in->Get());
  }
  destage_seq_ = in->Get();
  last_destage_done_ = in->Get();
#define DEVMODEL_GET(name) n_.name = in->Get();
  DEVMODEL_HDD_COUNTERS(DEVMODEL_GET)
#undef DEVMODEL_GET
  if (!in->ok()) return fail("truncated");
  return true;
}

HddModel::Plan HddModel::MakePlan(const Cmd& cmd, TimeNs t) const {
  const HddPosition p = g_.Locate(cmd.lba);
  const HddZone& z = g_.zone(p.zone);
  Plan plan{};
  plan.distance =
      p.cylinder > head_cylinder_ ? p.cylinder - head_cylinder_ : head_cylinder_ - p.cylinder;
  if (plan.distance != 0) {
    plan.seek_ns = g_.SeekNs(plan.distance);
    plan.position_ns = plan.seek_ns + (cmd.write ? c_.write_settle_ns : 0);
  } else if (p.head != head_) {
    plan.position_ns = c_.head_switch_ns;
  }
  const std::uint64_t rev = g_.rev_ps();
  const std::uint64_t arrive_ps = (t + plan.position_ns) * 1000;
  const std::uint64_t angle = g_.AngleAtPs(t + plan.position_ns);
  const std::uint64_t target = g_.SlotPs(z, p.slot);
  const std::uint64_t delta = (target + rev - angle) % rev;
  plan.begin_ps = (rev - delta <= kSlackPs) ? arrive_ps - (rev - delta) : arrive_ps + delta;
  const std::uint64_t end = cmd.lba + cmd.sectors;
  const std::uint64_t zone_end = std::min(end, z.end_lba);
  std::uint64_t sweep_ps = g_.SlotPs(z, p.slot + g_.SweepSlots(z, cmd.lba, zone_end)) - target;
  if (zone_end < end) {  // rare: a transfer running into the next zone
    const HddZone& next = g_.zone(p.zone + 1);
    sweep_ps += g_.SlotPs(next, g_.SweepSlots(next, zone_end, end)) + c_.head_switch_ns * 1000;
  }
  plan.end_ps = plan.begin_ps + sweep_ps;
  plan.end_ns = (plan.end_ps + 999) / 1000;
  if (p.sector + std::uint64_t{cmd.sectors} <= z.sectors_per_track) {  // ends on its track
    plan.end_cylinder = p.cylinder;
    plan.end_head = p.head;
    plan.end_zone = p.zone;
  } else {
    const HddPosition last = g_.Locate(end - 1);
    plan.end_cylinder = last.cylinder;
    plan.end_head = last.head;
    plan.end_zone = last.zone;
  }
  return plan;
}

void HddModel::Service(std::size_t index, TimeNs t) {
  const Cmd cmd = queue_[index];
  queue_.erase(queue_.begin() + static_cast<std::ptrdiff_t>(index));
  const Plan plan = MakePlan(cmd, t);
  ++n_.media_commands;
  if (plan.distance != 0) {
    ++n_.seeks;
    n_.seek_cylinders += plan.distance;
    n_.seek_ns += plan.seek_ns;
  }
  const std::uint64_t arrive_ps = (t + plan.position_ns) * 1000;
  if (plan.begin_ps > arrive_ps) n_.rotational_wait_ns += (plan.begin_ps - arrive_ps) / 1000;
  n_.media_busy_ns += plan.end_ns - t;
  head_cylinder_ = plan.end_cylinder;
  head_ = plan.end_head;
  mech_free_ = plan.end_ns;
  if (active_segment_ != kNever) {  // the head leaves: read-ahead stops
    Segment& s = segments_[active_segment_];
    s.ra_stop_ps = std::min(s.ra_stop_ps, t * 1000);
    active_segment_ = kNever;
  }
  const std::uint64_t end = cmd.lba + cmd.sectors;
  if (!cmd.write && ra_sectors_ > 0) {
    const std::uint32_t victim = index_.Victim();
    Segment& s = segments_[victim];
    s = Segment{};
    s.valid = true;
    s.start = cmd.lba;
    s.end = end;
    s.zone = plan.end_zone;
    s.ra_limit = std::min(g_.zone(plan.end_zone).end_lba, end + ra_sectors_);
    s.ready_ns = plan.end_ns;
    s.ra_begin_ps = plan.end_ps;
    SyncSegment(victim);
    index_.Touch(victim);
    active_segment_ = victim;
  }
  if (cmd.destage) {
    ++n_.destages;
    releases_.emplace(plan.end_ns, std::uint64_t{cmd.sectors} * c_.logical_block_bytes);
    last_destage_done_ = std::max(last_destage_done_, plan.end_ns);
    for (auto it = flushes_.begin(); it != flushes_.end();) {
      if (cmd.seq <= it->seq_bound && --it->remaining == 0) {
        done_[it->tag] = last_destage_done_ + c_.flush_overhead_ns;
        it = flushes_.erase(it);
      } else {
        ++it;
      }
    }
  } else if (c_.queue_policy == QueuePolicy::kFifo) {
    last_host_done_ = plan.end_ns;
  } else if (!cmd.cancelled) {
    done_[cmd.tag] = plan.end_ns;
  }
}

void HddModel::Advance(TimeNs limit) {
  while (!queue_.empty()) {
    if (c_.queue_policy == QueuePolicy::kFifo) {
      const TimeNs t = std::max(mech_free_, queue_.front().arrival);
      if (t > limit) return;
      Service(0, t);
      continue;
    }
    TimeNs first_arrival = kNever;
    for (const Cmd& cmd : queue_) first_arrival = std::min(first_arrival, cmd.arrival);
    const TimeNs t = std::max(mech_free_, first_arrival);
    if (t > limit) return;
    std::size_t pick = kNever, oldest = kNever;
    std::uint64_t best = kNever;
    for (std::size_t i = 0; i < queue_.size(); ++i) {
      if (queue_[i].arrival > t) continue;
      if (oldest == kNever || queue_[i].arrival < queue_[oldest].arrival) oldest = i;
      const std::uint64_t begin = MakePlan(queue_[i], t).begin_ps;
      if (begin < best) {
        best = begin;
        pick = i;
      }
    }
    if (t - queue_[oldest].arrival >= c_.sptf_max_wait_ns) {
      if (pick != oldest) ++n_.sptf_aged_picks;
      pick = oldest;
    }
    Service(pick, t);
  }
}

TimeNs HddModel::NextDecision() const {
  TimeNs first_arrival = kNever;
  for (const Cmd& cmd : queue_) first_arrival = std::min(first_arrival, cmd.arrival);
  return std::max(mech_free_, first_arrival);
}

std::uint64_t HddModel::RaReachPs(const Segment& s, std::uint64_t lba) const {
  if (lba <= s.end) return s.ra_begin_ps;
  const HddZone& z = g_.zone(s.zone);
  const std::uint64_t from = std::max(z.first_lba, s.end - 1);
  return s.ra_begin_ps + g_.SlotPs(z, g_.SweepSlots(z, from, lba) - (s.end - from));
}

bool HddModel::ReadFromCache(std::uint64_t lba, std::uint64_t end, TimeNs t, TimeNs* ready) {
  if (!index_.MayOverlap(lba, lba + 1)) return false;
  for (std::size_t i = 0; i < segments_.size(); ++i) {
    // A hit needs start <= lba < end <= max(end, ra_limit).
    if (!index_.Overlaps(static_cast<std::uint32_t>(i), lba, lba + 1)) continue;
    Segment& s = segments_[i];
    if (end <= s.end) {
      *ready = s.ready_ns;
      index_.Touch(static_cast<std::uint32_t>(i));
      ++n_.cache_read_hits;
      return true;
    }
    if (end > s.ra_limit || lba >= s.ra_limit) continue;
    const std::uint64_t stop = std::min(s.ra_stop_ps, RaReachPs(s, s.ra_limit));
    const std::uint64_t reach = RaReachPs(s, end);
    if (reach > stop) continue;
    *ready = (reach + 999) / 1000;
    if (s.ra_stop_ps == kNever && t * 1000 < stop) {  // still reading ahead: slide
      s.ra_limit = std::min(g_.zone(s.zone).end_lba, std::max(s.ra_limit, end + ra_sectors_));
      SyncSegment(i);
    }
    index_.Touch(static_cast<std::uint32_t>(i));
    ++n_.read_ahead_hits;
    return true;
  }
  return false;
}

void HddModel::InvalidateSegments(std::uint64_t lba, std::uint64_t end) {
  if (!index_.MayOverlap(lba, end)) return;
  for (std::size_t i = 0; i < segments_.size(); ++i) {
    if (index_.Overlaps(static_cast<std::uint32_t>(i), lba, end)) {  // valid and overlapping
      segments_[i].valid = false;
      SyncSegment(i);
      if (active_segment_ == i) active_segment_ = kNever;
    }
  }
}

void HddModel::ReleaseDirty(TimeNs t) {
  while (!releases_.empty() && releases_.top().first <= t) {
    dirty_bytes_ -= releases_.top().second;
    releases_.pop();
  }
}

Completion HddModel::Submit(const Request& r, TimeNs now) {
  const bool fifo = c_.queue_policy == QueuePolicy::kFifo;
  if (!fifo) Advance(now);
  const TimeNs t = now + c_.command_overhead_ns;
  const std::uint64_t lba = r.offset_bytes / c_.logical_block_bytes;
  const auto sectors = static_cast<std::uint32_t>(r.length_bytes / c_.logical_block_bytes);
  Cmd cmd{r.tag, lba, 0, sectors, false, false, false, t};
  switch (r.op) {
    case Op::kTrim:  // ATA disks without TRIM support: accepted, no media work
      ++n_.trims;
      return {t, true};
    case Op::kFlush: {
      ++n_.flushes;
      ReleaseDirty(t);
      std::uint64_t queued = 0;
      for (const Cmd& q : queue_) queued += q.destage ? 1 : 0;
      if (!c_.write_cache || dirty_bytes_ == 0) return {t + c_.flush_overhead_ns, true};
      if (queued == 0) return {std::max(t, last_destage_done_) + c_.flush_overhead_ns, true};
      flushes_.push_back({r.tag, destage_seq_, queued});
      return {NextDecision(), false};
    }
    case Op::kRead: {
      ++n_.reads;
      TimeNs ready = 0;
      if (ReadFromCache(lba, lba + sectors, t, &ready)) {
        return {std::max(t, ready) + InterfaceNs(r.length_bytes), true};
      }
      break;
    }
    case Op::kWrite: {
      ++n_.writes;
      InvalidateSegments(lba, lba + sectors);
      cmd.write = true;
      ReleaseDirty(t);
      if (c_.write_cache && dirty_bytes_ + r.length_bytes <= c_.cache_bytes) {
        ++n_.write_cache_absorbed;
        const TimeNs done = t + InterfaceNs(r.length_bytes);
        dirty_bytes_ += r.length_bytes;
        cmd.destage = true;
        cmd.seq = ++destage_seq_;
        cmd.arrival = done;
        queue_.push_back(cmd);
        n_.queue_depth_max = std::max<std::uint64_t>(n_.queue_depth_max, queue_.size());
        if (fifo) Advance(kNever);
        return {done, true};
      }
      break;
    }
  }
  queue_.push_back(cmd);
  n_.queue_depth_max = std::max<std::uint64_t>(n_.queue_depth_max, queue_.size());
  if (fifo) {
    Advance(kNever);
    return {last_host_done_, true};
  }
  return {NextDecision(), false};
}

Completion HddModel::Poll(std::uint64_t tag, TimeNs now) {
  Advance(now);
  const auto it = done_.find(tag);
  if (it != done_.end()) {
    const TimeNs done = it->second;
    done_.erase(it);
    return {done, true};
  }
  // Still queued (SPTF) or a FLUSH waiting for destages: poll again when the
  // mechanism decides next. Anything else is an unknown tag.
  const bool queued = std::any_of(queue_.begin(), queue_.end(),
                                  [tag](const Cmd& c) {
                                    return c.tag == tag && !c.destage && !c.cancelled;
                                  }) ||
                      std::any_of(flushes_.begin(), flushes_.end(),
                                  [tag](const PendingFlush& f) { return f.tag == tag; });
  if (!queued) return {now, true};
  return {std::max(now, NextDecision()), false};
}

bool HddModel::Cancel(std::uint64_t tag) {
  bool had = done_.erase(tag) > 0;
  for (Cmd& c : queue_) {
    if (c.tag == tag && !c.destage && !c.cancelled) c.cancelled = had = true;
  }
  const auto flush = std::find_if(flushes_.begin(), flushes_.end(),
                                  [tag](const PendingFlush& f) { return f.tag == tag; });
  if (flush != flushes_.end()) {
    flushes_.erase(flush);
    had = true;
  }
  return had;
}

std::string HddModel::CountersJson() const {
  nlohmann::json j;
  j["model"] = "hdd";
  j["reads"] = n_.reads;
  j["writes"] = n_.writes;
  j["flushes"] = n_.flushes;
  j["trims"] = n_.trims;
  j["cache_read_hits"] = n_.cache_read_hits;
  j["read_ahead_hits"] = n_.read_ahead_hits;
  j["write_cache_absorbed"] = n_.write_cache_absorbed;
  j["destages"] = n_.destages;
  j["media_commands"] = n_.media_commands;
  j["seeks"] = n_.seeks;
  j["seek_cylinders_total"] = n_.seek_cylinders;
  j["avg_seek_distance_cylinders"] =
      n_.seeks == 0 ? 0.0 : static_cast<double>(n_.seek_cylinders) / n_.seeks;
  j["seek_ns_total"] = n_.seek_ns;
  j["rotational_wait_ns_total"] = n_.rotational_wait_ns;
  j["media_busy_ns"] = n_.media_busy_ns;
  j["queue_depth_max"] = n_.queue_depth_max;
  j["sptf_aged_picks"] = n_.sptf_aged_picks;
  j["dirty_bytes"] = dirty_bytes_;
  j["cylinders"] = g_.cylinders();
  return j.dump();
}

}  // namespace

std::unique_ptr<Device> NewHdd(const HddConfig& config, std::string* error) {
  std::string geometry_error;
  HddGeometry geometry(config, &geometry_error);
  if (!geometry.ok()) {
    if (error != nullptr) *error = geometry_error;
    return nullptr;
  }
  if (config.cache_segments > 1024) {
    if (error != nullptr) *error = "hdd.cache_segments must be in [1, 1024]";
    return nullptr;
  }
  return std::make_unique<HddModel>(config, std::move(geometry));
}

}  // namespace devmodel

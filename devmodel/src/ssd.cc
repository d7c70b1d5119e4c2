#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "rng.h"
#include "state_cache.h"
#include "ssd_model.h"

namespace devmodel {

std::uint64_t SsdRawBytes(const SsdConfig& c) {
  return std::uint64_t{c.channels} * c.dies_per_channel * c.planes_per_die * c.blocks_per_plane *
         c.pages_per_block * c.page_bytes;
}

namespace {

std::string Range(const char* field, std::uint64_t lo, std::uint64_t hi) {
  return std::string(field) + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
         "]";
}

// Validates `c` and derives the FTL geometry; false + *error naming the
// profile key (ssd.<key>) if the configuration is inconsistent.
bool SsdGeometry(const SsdConfig& c, internal::FtlGeometry* out, std::string* error) {
  auto fail = [error](std::string msg) {
    if (error != nullptr) *error = std::move(msg);
    return false;
  };
  if (c.channels == 0 || c.dies_per_channel == 0 || c.planes_per_die == 0 ||
      c.blocks_per_plane == 0 || c.pages_per_block == 0) {
    return fail(
        "ssd geometry: ssd.channels, ssd.dies_per_channel, ssd.planes_per_die, "
        "ssd.blocks_per_plane and ssd.pages_per_block must be >= 1");
  }
  if (c.logical_block_bytes != 512 && c.logical_block_bytes != 4096) {
    return fail("ssd.logical_block_bytes must be 512 or 4096");
  }
  if (c.mapping_unit_bytes < c.logical_block_bytes ||
      c.mapping_unit_bytes % c.logical_block_bytes != 0) {
    return fail("ssd.mapping_unit_bytes (" + std::to_string(c.mapping_unit_bytes) +
                ") must be a multiple of ssd.logical_block_bytes (" +
                std::to_string(c.logical_block_bytes) + ")");
  }
  if (c.page_bytes < c.mapping_unit_bytes || c.page_bytes % c.mapping_unit_bytes != 0) {
    return fail("ssd.page_bytes (" + std::to_string(c.page_bytes) +
                ") must be a multiple of ssd.mapping_unit_bytes (" +
                std::to_string(c.mapping_unit_bytes) + ")");
  }
  if (c.channel_mb_s == 0) return fail(Range("ssd.channel_mb_s", 1, 1000000));
  if (c.max_inflight_commands == 0 || c.max_inflight_commands > 65536) {
    return fail(Range("ssd.max_inflight_commands", 1, 65536));
  }
  if (c.arbitration == Arbitration::kFifo) {
    for (const auto& [key, value] : {std::pair{"ssd.max_inflight_reads", c.max_inflight_reads},
                                     {"ssd.max_inflight_writes", c.max_inflight_writes},
                                     {"ssd.max_inflight_per_queue", c.max_inflight_per_queue}}) {
      if (value != 0) {
        return fail(std::string(key) + " (" + std::to_string(value) +
                    ") applies only with ssd.arbitration = \"round_robin\" (0 with \"fifo\")");
      }
    }
  } else if (c.arbitration != Arbitration::kRoundRobin) {
    return fail("ssd.arbitration must be \"fifo\" or \"round_robin\"");
  }
  if (c.max_inflight_reads > 65536) return fail(Range("ssd.max_inflight_reads", 0, 65536));
  if (c.max_inflight_writes > 65536) return fail(Range("ssd.max_inflight_writes", 0, 65536));
  if (c.max_inflight_per_queue > 65536) {
    return fail(Range("ssd.max_inflight_per_queue", 0, 65536));
  }
  // Profile keys are in us; 1e8 ns = the loader's 100000 us bound.
  if (c.suspend_latency_ns > 100000000) return fail(Range("ssd.suspend_latency_us", 0, 100000));
  if (c.resume_latency_ns > 100000000) return fail(Range("ssd.resume_latency_us", 0, 100000));
  if (c.max_suspends_per_op > 65535) return fail(Range("ssd.max_suspends_per_op", 0, 65535));
  if (c.slc_static_bytes > 0 || c.slc_dynamic_max_bytes > 0) {
    if (c.slc_program_ns == 0 || c.slc_program_ns > 100000000) {
      return fail(
          "ssd.slc_program_us must be in (0, 100000] with an SLC cache (ssd.slc_static_bytes or "
          "ssd.slc_dynamic_max_bytes > 0)");
    }
  } else if (c.slc_program_ns > 100000000) {
    return fail(Range("ssd.slc_program_us", 0, 100000));
  }
  if (c.slc_dynamic_free_ratio < 1 || c.slc_dynamic_free_ratio > 64) {
    return fail(Range("ssd.slc_dynamic_free_ratio", 1, 64));
  }
  if (c.slc_fold_idle_ns > 1000000000000ull) {
    return fail(Range("ssd.slc_fold_idle_ms", 0, 1000000));
  }
  for (const auto& [key, value] : {std::pair{"ssd.page_read_lower_us", c.page_read_lower_ns},
                                   {"ssd.page_read_middle_us", c.page_read_middle_ns},
                                   {"ssd.page_read_upper_us", c.page_read_upper_ns},
                                   {"ssd.page_program_lower_us", c.page_program_lower_ns},
                                   {"ssd.page_program_middle_us", c.page_program_middle_ns},
                                   {"ssd.page_program_upper_us", c.page_program_upper_ns},
                                   {"ssd.read_retry_us", c.read_retry_ns}}) {
    if (value > 100000000) return fail(Range(key, 0, 100000));
  }
  if (!(c.read_retry_probability >= 0 && c.read_retry_probability <= 1)) {
    return fail("ssd.read_retry_probability must be in [0, 1]");
  }
  if (c.read_retry_max_rounds > 64) return fail(Range("ssd.read_retry_max_rounds", 0, 64));
  if (c.read_retry_probability > 0 && c.read_retry_max_rounds == 0) {
    return fail(Range("ssd.read_retry_max_rounds", 1, 64) + " when ssd.read_retry_probability > 0");
  }
  if (c.gc_foreground_free_blocks < 2) {
    return fail(Range("ssd.gc_foreground_free_blocks", 2, 100000));
  }
  if (c.gc_background_free_blocks < c.gc_foreground_free_blocks) {
    return fail("ssd.gc_background_free_blocks (" + std::to_string(c.gc_background_free_blocks) +
                ") must be >= ssd.gc_foreground_free_blocks (" +
                std::to_string(c.gc_foreground_free_blocks) + ")");
  }
  const std::uint64_t dies = std::uint64_t{c.channels} * c.dies_per_channel;
  // Block metadata is dense (Ftl: 16 bytes per block plus group minima).
  if (dies * c.blocks_per_plane > kMaxSsdBlocks) {
    return fail("ssd geometry: ssd.channels x ssd.dies_per_channel x ssd.blocks_per_plane (" +
                std::to_string(dies * c.blocks_per_plane) +
                ") must be <= " + std::to_string(kMaxSsdBlocks) + " erase blocks");
  }
  internal::FtlGeometry g;
  g.dies = static_cast<std::uint32_t>(dies);
  g.blocks_per_die = c.blocks_per_plane;
  g.slots_per_page = c.page_bytes / c.mapping_unit_bytes;
  g.gc_foreground_free_blocks = c.gc_foreground_free_blocks;
  g.gc_background_free_blocks = c.gc_background_free_blocks;
  const std::uint64_t slots_per_block =
      std::uint64_t{g.slots_per_page} * c.planes_per_die * c.pages_per_block;
  if (slots_per_block > internal::Ftl::kMaxSlotsPerBlock) {
    return fail("ssd geometry: a block may hold at most " +
                std::to_string(internal::Ftl::kMaxSlotsPerBlock) +
                " mapping units (ssd.planes_per_die x ssd.pages_per_block x ssd.page_bytes / "
                "ssd.mapping_unit_bytes)");
  }
  g.slots_per_program = g.slots_per_page * c.planes_per_die;
  g.slots_per_block = static_cast<std::uint32_t>(slots_per_block);
  const std::uint64_t raw_slots = std::uint64_t{g.dies} * g.blocks_per_die * g.slots_per_block;
  if (raw_slots >= 0xFFFFFFFFull) {
    return fail(
        "ssd geometry: raw capacity / ssd.mapping_unit_bytes must be < 2^32 "
        "(raise ssd.mapping_unit_bytes)");
  }
  const std::uint64_t raw = SsdRawBytes(c);
  // Each die needs its share of user data plus the GC reserve, two open blocks
  // and one block of slack, or GC could find no victim worth collecting.
  const std::uint64_t max_cap =
      (g.blocks_per_die > c.gc_foreground_free_blocks + 3)
          ? std::uint64_t{g.blocks_per_die - c.gc_foreground_free_blocks - 3} * g.slots_per_block *
                g.dies * c.mapping_unit_bytes
          : 0;
  std::uint64_t capacity = c.capacity_bytes;
  if (capacity == 0) {
    capacity = std::min(raw / 100 * 93, max_cap) / c.mapping_unit_bytes * c.mapping_unit_bytes;
  }
  if (capacity % c.mapping_unit_bytes != 0) {
    return fail("ssd.capacity_bytes (" + std::to_string(capacity) +
                ") must be a multiple of ssd.mapping_unit_bytes (" +
                std::to_string(c.mapping_unit_bytes) + ")");
  }
  g.exported_slots = capacity / c.mapping_unit_bytes;
  const std::uint64_t per_die = (g.exported_slots + g.dies - 1) / g.dies;
  const std::uint64_t needed =
      (per_die + g.slots_per_block - 1) / g.slots_per_block + c.gc_foreground_free_blocks + 3;
  if (capacity == 0 || needed > g.blocks_per_die) {
    return fail(Range("ssd.capacity_bytes", c.mapping_unit_bytes, max_cap) +
                " for this geometry (raw " + std::to_string(raw) +
                " bytes; over-provisioning must leave ssd.gc_foreground_free_blocks + 3 blocks "
                "per die)");
  }
  if (c.slc_static_bytes > capacity) {
    return fail("ssd.slc_static_bytes (" + std::to_string(c.slc_static_bytes) +
                ") must be <= the exported capacity (" + std::to_string(capacity) + " bytes)");
  }
  if (!(c.precondition_overwrite_factor >= 0 && c.precondition_overwrite_factor <= 16)) {
    return fail("ssd.precondition_overwrite_factor must be in [0, 16]");
  }
  *out = g;
  return true;
}

}  // namespace

bool CheckSsdConfig(const SsdConfig& config, std::uint64_t* capacity_bytes, std::string* error) {
  internal::FtlGeometry g;
  if (!SsdGeometry(config, &g, error)) return false;
  if (capacity_bytes != nullptr) *capacity_bytes = g.exported_slots * config.mapping_unit_bytes;
  return true;
}

std::unique_ptr<Device> NewSsd(const SsdConfig& c, std::uint64_t seed, std::string* error) {
  return NewSsd(c, seed, SsdStateCache{}, error);
}

std::unique_ptr<Device> NewSsd(const SsdConfig& c, std::uint64_t seed, const SsdStateCache& cache,
                               std::string* error) {
  internal::FtlGeometry g;
  if (!SsdGeometry(c, &g, error)) return nullptr;
  return std::make_unique<internal::SsdModel>(c, g, seed, cache);
}

namespace internal {

SsdModel::SsdModel(const SsdConfig& config, const FtlGeometry& geometry, std::uint64_t seed,
                   const SsdStateCache& cache)
    : c_(config),
      capacity_bytes_(geometry.exported_slots * config.mapping_unit_bytes),
      unit_bytes_(config.mapping_unit_bytes),
      unit_shift_((config.mapping_unit_bytes & (config.mapping_unit_bytes - 1)) == 0
                      ? __builtin_ctz(config.mapping_unit_bytes)
                      : -1),
      ftl_(geometry, nullptr),
      dies_(geometry.dies),
      die_busy_until_(geometry.dies, 0),
      channel_busy_(config.channels),
      read_channel_busy_(config.channels, 0),
      track_pe_shifts_(config.resume_latency_ns != 0 || config.max_suspends_per_op != 0 ||
                       config.independent_plane_reads || config.gc_yield),
      page_types_(config.page_read_lower_ns != 0 || config.page_read_middle_ns != 0 ||
                  config.page_read_upper_ns != 0 || config.page_program_lower_ns != 0 ||
                  config.page_program_middle_ns != 0 || config.page_program_upper_ns != 0),
      page_read_ns_{config.page_read_lower_ns, config.page_read_middle_ns,
                    config.page_read_upper_ns},
      page_program_ns_{config.page_program_lower_ns, config.page_program_middle_ns,
                       config.page_program_upper_ns},
      pages_per_block_all_planes_(geometry.slots_per_block / geometry.slots_per_page),
      retry_rng_(seed ^ 0x7265747279ull),  // "retry": a stream apart from preconditioning's
      slc_enabled_(config.slc_static_bytes != 0 || config.slc_dynamic_max_bytes != 0),
      program_bytes_(std::uint64_t{geometry.slots_per_program} * config.mapping_unit_bytes),
      buffer_capacity_units_(config.write_buffer_bytes / config.mapping_unit_bytes) {
  for (int type = 0; type < 3; ++type) {
    if (page_read_ns_[type] == 0) page_read_ns_[type] = c_.page_read_ns;
    if (page_program_ns_[type] == 0) page_program_ns_[type] = c_.page_program_ns;
  }
  if (slc_enabled_) slc_programs_on_die_.assign(geometry.dies, 0);
  if (c_.arbitration == Arbitration::kRoundRobin) {
    read_pipeline_.slot_free.assign(
        c_.max_inflight_reads != 0 ? c_.max_inflight_reads : c_.max_inflight_commands, 0);
    write_pipeline_.slot_free.assign(
        c_.max_inflight_writes != 0 ? c_.max_inflight_writes : c_.max_inflight_commands, 0);
  }
  if (c_.independent_plane_reads) {
    plane_read_busy_.assign(std::size_t{geometry.dies} * c_.planes_per_die, 0);
  }
  // Preconditioning runs the FTL untimed: the drive starts at t = 0 idle.
  // A steady drive's state comes from the state cache where it holds one.
  const bool cached = !cache.dir.empty() && !cache.config_text.empty() &&
                      (c_.precondition == Precondition::kSteady ||
                       c_.precondition == Precondition::kSteadySimulated);
  const std::string key = cached ? FtlStateKey(cache.config_text, seed) : std::string();
  bool loaded = false;
  if (cached) {
    std::string note;
    loaded = LoadFtlState(cache.dir, key, &ftl_, &note);
    if (!loaded && !note.empty()) {
      std::fprintf(stderr, "devmodel: state cache: %s; rebuilding by replay\n", note.c_str());
    }
  }
  state_loaded_ = loaded;
  if (!loaded) RunPrecondition(seed);
  if (cached && !loaded && ftl_.CanSaveState()) {
    std::string note;
    if (!SaveFtlState(cache.dir, key, ftl_, &note)) {
      std::fprintf(stderr, "devmodel: state cache: not saved: %s\n", note.c_str());
    }
  }
  baseline_ = ftl_.counters();
  for (std::uint32_t units = 0; units <= geometry.slots_per_program; ++units) {
    channel_ns_.push_back(XferNs(std::uint64_t{units} * unit_bytes_, c_.channel_mb_s));
  }
  ftl_.set_listener(this);
}

void SsdModel::RunPrecondition(std::uint64_t seed) {
  const std::uint64_t n = ftl_.geometry().exported_slots;
  const auto overwrites =
      static_cast<std::uint64_t>(c_.precondition_overwrite_factor * static_cast<double>(n));
  Rng rng(seed);
  switch (c_.precondition) {
    case Precondition::kNone:
      break;
    case Precondition::kFull:
      ftl_.PreconditionFull();
      break;
    case Precondition::kSteady:
      ftl_.BuildSteadyState(overwrites, rng);
      break;
    case Precondition::kSteadySimulated: {
      ftl_.ReserveFullMap();
      for (std::uint64_t lpn = 0; lpn < n; ++lpn) ftl_.Write(lpn);
      std::vector<std::uint64_t> batch(std::min<std::uint64_t>(overwrites, 4096));
      for (std::uint64_t done = 0; done < overwrites; done += batch.size()) {
        batch.resize(std::min<std::uint64_t>(batch.size(), overwrites - done));
        for (std::uint64_t& lpn : batch) lpn = rng.Below(n);
        ftl_.WriteMany(batch.data(), batch.size());
      }
      break;
    }
  }
  ftl_.FlushPending();
}

std::uint32_t SsdModel::DieOfOffset(std::uint64_t offset_bytes) const {
  const std::uint32_t ppn = ftl_.Lookup(UnitOf(offset_bytes));
  return ppn == Ftl::kUnmapped ? 0xFFFFFFFFu : ftl_.DieOfPpn(ppn);
}

namespace {

// Earliest time >= now at which fewer than `limit` of the ends in `heap` lie
// beyond it; takes that entry. REQUIRES: `now` never decreases between calls.
TimeNs TakeSlot(std::priority_queue<TimeNs, std::vector<TimeNs>, std::greater<>>* heap,
                std::uint32_t limit, TimeNs now) {
  while (!heap->empty() && heap->top() <= now) heap->pop();
  if (heap->size() < limit) return now;
  const TimeNs start = heap->top();  // earliest earlier command frees a slot
  heap->pop();
  return start;
}

}  // namespace

SsdModel::Admission SsdModel::Admit(const Request& r, TimeNs now) {
  Admission a{now, &inflight_, nullptr, nullptr};
  if (c_.arbitration == Arbitration::kFifo) {
    a.start = TakeSlot(&inflight_, c_.max_inflight_commands, now);
  } else {
    a = AdmitRoundRobin(r, now);
  }
  n_.admission_wait_ns += a.start - now;
  if (r.op == Op::kRead) n_.read_admission_wait_ns += a.start - now;
  return a;
}

SsdModel::Admission SsdModel::AdmitRoundRobin(const Request& r, TimeNs now) {
  Pipeline& p = r.op == Op::kRead ? read_pipeline_ : write_pipeline_;
  Admission a{now, nullptr, &p, nullptr};
  if (c_.max_inflight_per_queue != 0) {
    const std::uint32_t q = r.queue_id % kSsdArbitratedQueues;
    if (q >= p.queues.size()) p.queues.resize(q + 1);
    a.queue = &p.queues[q];
    a.start = TakeSlot(a.queue, c_.max_inflight_per_queue, now);
  }
  // The slot that frees last by a.start (a queue waiting for its own limit
  // takes the slot its own earlier command leaves, not one another queue
  // could use now), else the earliest to free. Removed here; Submit puts
  // the command's end back.
  auto it = std::upper_bound(p.slot_free.begin(), p.slot_free.end(), a.start);
  if (it == p.slot_free.begin()) {
    a.start = *it;
  } else {
    --it;
  }
  p.slot_free.erase(it);
  return a;
}

Completion SsdModel::Submit(const Request& r, TimeNs now) {
  channel_prune_ = submit_now_;
  submit_now_ = now;
  ServeReads(now);
  if (gc_background_due_ && now >= last_completion_ + c_.gc_idle_delay_ns) BackgroundGc(now);
  if (slc_programs_ != 0 && now >= last_completion_ + c_.slc_fold_idle_ns) FoldSlc(now);
  const Admission admission = Admit(r, now);
  const TimeNs t0 = admission.start + c_.controller_overhead_ns;
  // The command's end as far as known now; a read's end is decided later.
  TimeNs end = t0;
  switch (r.op) {
    case Op::kRead: {
      const std::uint64_t seq = read_seq_++;
      std::uint32_t pages = 0;
      TimeNs own_end = t0;
      const TimeNs sensed = Read(r, t0, seq, &pages, &own_end);
      const TimeNs link_xfer = c_.host_link_mb_s == 0 ? 0 : LinkNs(r.length_bytes);
      reads_.Put(r.tag, {sensed, own_end, link_xfer, seq, pages, ReadStage::kChannel});
      if (pages == 0) PagesIn(r.tag, &reads_.find(r.tag)->second);
      end = own_end + link_xfer;
      break;
    }
    case Op::kWrite:
      end = Write(r, t0);
      break;
    case Op::kFlush:
      end = Flush(t0);
      break;
    case Op::kTrim:
      end = Trim(r, t0);
      break;
  }
  if (admission.pipeline == nullptr) {
    admission.pool->push(end);
  } else {
    auto& slots = admission.pipeline->slot_free;
    slots.insert(std::upper_bound(slots.begin(), slots.end(), end), end);
    if (admission.queue != nullptr) admission.queue->push(end);
  }
  last_completion_ = std::max(last_completion_, end);
  if (r.op != Op::kRead) return {end, true};
  return Poll(r.tag, now);  // final at once only if its data is through by now
}

void SsdModel::PagesIn(std::uint64_t tag, ReadState* s) {
  s->time = s->data_in;
  if (c_.host_link_mb_s == 0) {
    s->stage = ReadStage::kDone;
    last_completion_ = std::max(last_completion_, s->time);
    return;
  }
  s->stage = ReadStage::kLink;
  link_out_queue_.push({s->data_in, s->link_xfer, s->seq, tag, s->seq, 0});
}

void SsdModel::ServeReads(TimeNs now) {
  // Channels first: a read whose data is in by `now` had every page sensed
  // by then, so its link transfer is queued before the link is served.
  while (!channel_queue_.empty() && channel_queue_.top().ready <= now) {
    const Transfer t = channel_queue_.top();
    channel_queue_.pop();
    TimeNs& channel = read_channel_busy_[t.channel];
    channel = std::max(t.ready, channel) + t.xfer;
    const auto it = reads_.find(t.tag);
    // A tag reused before its read was polled final keeps the newer read.
    if (it == reads_.end() || it->second.seq != t.read_seq) continue;
    ReadState& s = it->second;
    s.data_in = std::max(s.data_in, channel);
    if (--s.pages_left == 0) PagesIn(t.tag, &s);
  }
  while (!link_out_queue_.empty() && link_out_queue_.top().ready <= now) {
    const Transfer& t = link_out_queue_.top();
    link_out_busy_ = std::max(t.ready, link_out_busy_) + t.xfer;
    const auto it = reads_.find(t.tag);
    if (it != reads_.end() && it->second.seq == t.read_seq) {
      it->second.time = link_out_busy_;
      it->second.stage = ReadStage::kDone;
    }
    last_completion_ = std::max(last_completion_, link_out_busy_);
    link_out_queue_.pop();
  }
}

Completion SsdModel::Poll(std::uint64_t tag, TimeNs now) {
  const auto it = reads_.find(tag);
  if (it == reads_.end()) return {now, true};  // unknown tag
  if (it->second.stage != ReadStage::kDone && it->second.time <= now) ServeReads(now);
  const TimeNs time = it->second.time;
  if (it->second.stage != ReadStage::kDone) return {time, false};  // next stage at `time`
  reads_.Erase(it);
  return {time, true};
}

bool SsdModel::InWriteBuffer(std::uint32_t ppn, TimeNs t) {
  if (ftl_.IsPendingHost(ppn)) return true;
  auto& programs = dies_[ftl_.DieOfPpn(ppn)].programs;
  while (!programs.empty() && programs.front().done <= t) programs.pop_front();
  if (programs.empty()) return false;
  const std::uint32_t block = ftl_.BlockOfPpn(ppn);
  const std::uint32_t slot = ppn - block * ftl_.geometry().slots_per_block;
  for (std::size_t i = 0; i < programs.size(); ++i) {
    const InflightProgram& p = programs[i];
    if (p.block == block && slot >= p.first_slot && slot < p.end_slot) return true;
  }
  return false;
}

TimeNs SsdModel::ReadPage(std::uint32_t die, std::uint32_t page, TimeNs t, std::uint32_t units) {
  DieTimeline& d = dies_[die];
  TimeNs& busy_until = die_busy_until_[die];
  // The sensing unit: the die, or with independent_plane_reads the page's
  // plane (program units stripe pages over planes in order).
  TimeNs& sense_free =
      plane_read_busy_.empty()
          ? d.read_busy_until
          : plane_read_busy_[std::size_t{die} * c_.planes_per_die + page % c_.planes_per_die];
  while (!d.pe_ops.empty() && d.pe_ops.front().end + d.pe_shift <= t) {
    d.pe_ops.pop_front();
    d.front_suspends = 0;
  }
  const bool in_progress = !d.pe_ops.empty() && d.pe_ops.front().start + d.pe_shift <= t;
  TimeNs start = std::max(t, sense_free);
  TimeNs suspend_ns = 0;  // die time beyond the read's own: suspend + resume
  bool suspended = false;
  if (in_progress) {
    if (c_.suspend_enabled &&
        (c_.max_suspends_per_op == 0 || d.front_suspends < c_.max_suspends_per_op)) {
      start += c_.suspend_latency_ns;  // program/erase paused, resumed after the read
      suspend_ns = c_.suspend_latency_ns + c_.resume_latency_ns;
      suspended = true;
      ++d.front_suspends;
      ++n_.suspends;
    } else {
      if (c_.suspend_enabled) ++n_.suspends_refused;
      start = std::max(start, d.pe_ops.front().end + d.pe_shift);
    }
  }
  TimeNs sense_ns = c_.page_read_ns;
  if (page_types_) {
    sense_ns = page_read_ns_[page % pages_per_block_all_planes_ / c_.planes_per_die % 3];
  }
  if (c_.read_retry_probability > 0) sense_ns += ReadRetryRounds() * c_.read_retry_ns;
  const TimeNs sensed = start + sense_ns;
  const TimeNs end = sensed + ChannelNs(units);  // the page register is free then
  // The part of the read not overlapping reads already booked on other
  // planes of the die (with one sensing unit per die, all of it).
  const TimeNs die_time = end - std::max(start, std::min(end, d.read_busy_until)) + suspend_ns;
  // Booked program/erase work that the read overtook or paused runs later.
  if (busy_until > start) {
    busy_until += die_time;
    if (track_pe_shifts_) {
      d.pe_shift += die_time;
      if (in_progress && !suspended) {  // the operation it waited for ends as booked
        d.pe_ops.front().start -= die_time;
        d.pe_ops.front().end -= die_time;
      }
    }
  } else {
    busy_until = std::max(busy_until, end);
  }
  sense_free = end;
  d.read_busy_until = std::max(d.read_busy_until, end);
  d.busy_ns += die_time;
  ++n_.nand_pages_read;
  return sensed;
}

TimeNs SsdModel::Read(const Request& r, TimeNs t0, std::uint64_t seq, std::uint32_t* pages,
                      TimeNs* own_end) {
  ++n_.reads;
  n_.host_bytes_read += r.length_bytes;
  const std::uint64_t first = UnitOf(r.offset_bytes);
  const std::uint64_t last = UnitOf(r.offset_bytes + r.length_bytes - 1);
  TimeNs sensed = t0;
  *pages = 0;
  *own_end = t0;
  std::uint32_t page = Ftl::kUnmapped, page_die = 0, page_units = 0;
  auto read_page = [&] {
    const TimeNs page_sensed = ReadPage(page_die, page, t0, page_units);
    const TimeNs xfer = ChannelNs(page_units);
    channel_queue_.push({page_sensed, xfer, page_seq_++, r.tag, seq, ChannelOf(page_die)});
    sensed = std::max(sensed, page_sensed);
    *own_end = std::max(*own_end, page_sensed + xfer);
    ++*pages;
  };
  for (std::uint64_t lpn = first; lpn <= last; ++lpn) {
    const std::uint32_t ppn = ftl_.Lookup(lpn);
    if (ppn == Ftl::kUnmapped) {
      ++n_.unmapped_reads;
      continue;
    }
    if (InWriteBuffer(ppn, t0)) {
      ++n_.write_buffer_hits;
      continue;
    }
    const std::uint32_t ppn_page = ftl_.PageOfPpn(ppn);
    if (ppn_page == page) {
      ++page_units;
      continue;
    }
    if (page_units != 0) read_page();
    page = ppn_page;
    page_die = ftl_.DieOfPpn(ppn);
    page_units = 1;
  }
  if (page_units != 0) read_page();
  return sensed;
}

TimeNs SsdModel::Write(const Request& r, TimeNs t0) {
  ++n_.writes;
  n_.host_bytes_written += r.length_bytes;
  const std::uint64_t first = UnitOf(r.offset_bytes);
  const std::uint64_t last = UnitOf(r.offset_bytes + r.length_bytes - 1);
  const std::uint64_t units = last - first + 1;
  TimeNs t_space = t0;
  if (buffer_capacity_units_ > 0) {
    while (!buffer_releases_.empty() && buffer_releases_.top().first <= t0) {
      buffer_used_units_ -= buffer_releases_.top().second;
      buffer_releases_.pop();
    }
    const std::uint64_t need = std::min(units, buffer_capacity_units_);
    while (buffer_used_units_ + need > buffer_capacity_units_ && !buffer_releases_.empty()) {
      t_space = std::max(t_space, buffer_releases_.top().first);
      buffer_used_units_ -= buffer_releases_.top().second;
      buffer_releases_.pop();
    }
    n_.write_buffer_stall_ns += t_space - t0;
  }
  const TimeNs in_buffer = LinkTransfer(&link_in_busy_, t_space, r.length_bytes);
  if (buffer_capacity_units_ > 0) buffer_used_units_ += units;
  dispatch_time_ = in_buffer;
  call_program_done_ = 0;
  for (std::uint64_t lpn = first; lpn <= last; ++lpn) ftl_.Write(lpn);
  if (buffer_capacity_units_ == 0) {
    ftl_.FlushPending();
    return std::max(in_buffer, call_program_done_);
  }
  return in_buffer;
}

TimeNs SsdModel::Flush(TimeNs t0) {
  ++n_.flushes;
  if (c_.power_loss_protection) return t0;
  dispatch_time_ = t0;
  ftl_.FlushPending();
  return std::max(t0, last_program_done_);
}

TimeNs SsdModel::Trim(const Request& r, TimeNs t0) {
  ++n_.trims;
  const std::uint64_t first = (r.offset_bytes + unit_bytes_ - 1) / unit_bytes_;
  const std::uint64_t end = (r.offset_bytes + r.length_bytes) / unit_bytes_;
  for (std::uint64_t lpn = first; lpn < end; ++lpn) ftl_.Trim(lpn);
  if (first < end) gc_background_due_ = true;
  return t0;
}

void SsdModel::BackgroundGc(TimeNs now) {
  // Only when the device has been idle: no command in flight and none for
  // gc_idle_delay_ns. GC steps that would have started during the idle time
  // are scheduled there; the last one may still be running at `now`. A step
  // is a whole victim block, or with gc_background_preemptible one GC program
  // unit's moves or one erase (the victim in progress stays for the next
  // idle time).
  // REQUIRES (checked by Submit): gc_background_due_ and the idle delay passed.
  const TimeNs idle_from = last_completion_ + c_.gc_idle_delay_ns;
  const std::uint32_t step_moves = ftl_.geometry().slots_per_program;
  bool any_below = false;
  for (std::uint32_t die = 0; die < dies_.size(); ++die) {
    while (ftl_.free_blocks(die) < c_.gc_background_free_blocks) {
      const TimeNs t = std::max(idle_from, die_busy_until_[die]);
      if (t >= now) {
        any_below = true;
        break;
      }
      dispatch_time_ = t;
      if (c_.gc_background_preemptible) {
        const std::uint64_t victims = ftl_.counters().gc_runs;
        if (!ftl_.CollectStep(die, step_moves, /*erase_alone=*/true)) break;
        n_.gc_background_runs += ftl_.counters().gc_runs - victims;
      } else {
        if (!ftl_.CollectOne(die)) break;
        ++n_.gc_background_runs;
      }
    }
  }
  gc_background_due_ = any_below;
}

std::uint32_t SsdModel::ReadRetryRounds() {
  std::uint32_t rounds = 0;
  while (rounds < c_.read_retry_max_rounds && retry_rng_.Uniform() < c_.read_retry_probability) {
    ++rounds;
  }
  if (rounds != 0) {
    ++n_.reads_retried;
    n_.read_retry_rounds += rounds;
  }
  return rounds;
}

std::uint64_t SsdModel::SlcCapacityBytes() const {
  const std::uint64_t free_bytes =
      (ftl_.geometry().exported_slots - ftl_.mapped_slots()) * std::uint64_t{unit_bytes_};
  return c_.slc_static_bytes +
         std::min(c_.slc_dynamic_max_bytes, free_bytes / c_.slc_dynamic_free_ratio);
}

void SsdModel::OnHostProgram(std::uint32_t die, std::uint32_t block, std::uint32_t first_slot,
                             std::uint32_t slots, std::uint32_t host_slots) {
  DieTimeline& d = dies_[die];
  TimeNs& busy_until = die_busy_until_[die];
  const TimeNs xfer = ChannelNs(slots);
  TimeNs program_ns =
      page_types_ ? page_program_ns_[PageTypeOfSlot(first_slot)] : c_.page_program_ns;
  if (slc_enabled_) {
    if ((slc_programs_ + 1) * program_bytes_ <= SlcCapacityBytes()) {
      program_ns = c_.slc_program_ns;
      ++slc_programs_;
      ++slc_programs_on_die_[die];
      n_.slc_bytes_written += program_bytes_;
    } else {
      n_.slc_bypass_bytes += program_bytes_;
    }
  }
  const TimeNs start =
      BookChannel(ChannelOf(die), std::max(dispatch_time_, busy_until), xfer);
  busy_until = start + xfer + program_ns;
  d.pe_ops.push_back({start - d.pe_shift, busy_until - d.pe_shift});
  d.busy_ns += xfer + program_ns;
  const TimeNs done = busy_until;
  while (!d.programs.empty() && d.programs.front().done <= dispatch_time_) d.programs.pop_front();
  d.programs.push_back({block, first_slot, first_slot + slots, done});
  if (buffer_capacity_units_ > 0) buffer_releases_.emplace(done, host_slots);
  call_program_done_ = std::max(call_program_done_, done);
  last_program_done_ = std::max(last_program_done_, done);
  if (ftl_.free_blocks(die) < c_.gc_background_free_blocks) gc_background_due_ = true;
}

void SsdModel::BookDieWork(std::uint32_t die, TimeNs start, TimeNs work) {
  DieTimeline& d = dies_[die];
  die_busy_until_[die] = start + work;
  d.pe_ops.push_back({start - d.pe_shift, start + work - d.pe_shift});
  d.busy_ns += work;
}

TimeNs SsdModel::BookChannel(std::uint32_t channel, TimeNs earliest, TimeNs xfer) {
  ChannelBookings& b = channel_busy_[channel];
  auto& v = b.busy;
  while (b.head < v.size() && v[b.head].second <= channel_prune_) ++b.head;
  if (b.head >= 64 && b.head * 2 >= v.size()) {
    v.erase(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(b.head));
    b.head = 0;
  }
  // Ends are in start order too (disjoint): skip the bookings over by then.
  auto it = std::lower_bound(v.begin() + static_cast<std::ptrdiff_t>(b.head), v.end(), earliest,
                             [](const std::pair<TimeNs, TimeNs>& x, TimeNs t) {
                               return x.second <= t;
                             });
  TimeNs start = earliest;
  while (it != v.end() && it->first < start + xfer) {
    start = std::max(start, it->second);
    ++it;
  }
  if (xfer != 0) v.insert(it, {start, start + xfer});
  return start;
}

void SsdModel::PrunePeOps(std::uint32_t die) {
  DieTimeline& d = dies_[die];
  while (!d.pe_ops.empty() && d.pe_ops.front().end + d.pe_shift <= submit_now_) {
    d.pe_ops.pop_front();
    d.front_suspends = 0;
  }
}

void SsdModel::OnGcProgram(std::uint32_t die, std::uint32_t pages_read) {
  const auto& g = ftl_.geometry();
  const TimeNs page_xfer = ChannelNs(g.slots_per_page);
  const TimeNs prog_xfer = ChannelNs(g.slots_per_program);
  const TimeNs start = std::max(dispatch_time_, die_busy_until_[die]);
  if (c_.gc_yield) {  // one operation per page move, then the program
    PrunePeOps(die);
    TimeNs t = start;
    for (std::uint32_t i = 0; i < pages_read; ++i, t += c_.page_read_ns + page_xfer) {
      BookDieWork(die, t, c_.page_read_ns + page_xfer);
    }
    BookDieWork(die, t, prog_xfer + c_.page_program_ns);
  } else {
    BookDieWork(die, start,
                pages_read * (c_.page_read_ns + page_xfer) + prog_xfer + c_.page_program_ns);
  }
  BookChannel(ChannelOf(die), start, pages_read * page_xfer + prog_xfer);
  n_.gc_pages_read += pages_read;
}

void SsdModel::OnErase(std::uint32_t die) {
  BookDieWork(die, std::max(dispatch_time_, die_busy_until_[die]), c_.block_erase_ns);
}

void SsdModel::FoldSlc(TimeNs now) {
  // Like BackgroundGc: only from the idle point on. REQUIRES (checked by
  // Submit): SLC data to fold and slc_fold_idle_ns of idle time passed.
  const TimeNs idle_from = last_completion_ + c_.slc_fold_idle_ns;
  const TimeNs xfer = ChannelNs(ftl_.geometry().slots_per_program);
  const TimeNs step = c_.page_read_ns + 2 * xfer + c_.page_program_ns;
  for (std::uint32_t die = 0; die < dies_.size(); ++die) {
    if (slc_programs_on_die_[die] == 0) continue;
    PrunePeOps(die);
    while (slc_programs_on_die_[die] != 0) {
      const TimeNs t = std::max(idle_from, die_busy_until_[die]);
      if (t >= now) break;
      BookDieWork(die, t, step);
      // Out to the controller after the SLC read, back before the program.
      BookChannel(ChannelOf(die), t + c_.page_read_ns, 2 * xfer);
      --slc_programs_on_die_[die];
      --slc_programs_;
      n_.slc_bytes_folded += program_bytes_;
    }
  }
}

std::uint32_t SsdModel::NextHostDie(std::uint32_t previous, std::uint32_t dies) {
  // Dynamic striping: the next program unit goes to the die that frees first
  // (ties in round-robin order), so a die busy with GC does not hold the buffer.
  const std::uint32_t next = previous + 1 == dies ? 0 : previous + 1;
  std::uint32_t best = next;
  TimeNs best_until = die_busy_until_[next];
  for (std::uint32_t die = next + 1; die < dies; ++die) {
    if (die_busy_until_[die] < best_until) best_until = die_busy_until_[best = die];
  }
  for (std::uint32_t die = 0; next != 0 && die <= previous; ++die) {
    if (die_busy_until_[die] < best_until) best_until = die_busy_until_[best = die];
  }
  return best;
}

std::string SsdModel::CountersJson() const {
  const FtlCounters& f = ftl_.counters();
  const std::uint64_t host_units = f.host_slots_written - baseline_.host_slots_written;
  const std::uint64_t nand_units = f.nand_slots_programmed - baseline_.nand_slots_programmed;
  nlohmann::json j;
  j["model"] = "ssd";
  j["reads"] = n_.reads;
  j["writes"] = n_.writes;
  j["flushes"] = n_.flushes;
  j["trims"] = n_.trims;
  j["host_bytes_read"] = n_.host_bytes_read;
  j["host_bytes_written"] = n_.host_bytes_written;
  j["host_units_written"] = host_units;
  j["nand_bytes_written"] = nand_units * unit_bytes_;
  j["nand_pages_read"] = n_.nand_pages_read + n_.gc_pages_read;
  j["waf"] = host_units == 0 ? 0.0 : static_cast<double>(nand_units) / host_units;
  j["gc_runs"] = f.gc_runs - baseline_.gc_runs;
  j["gc_background_runs"] = n_.gc_background_runs;
  j["gc_units_moved"] = f.gc_slots_moved - baseline_.gc_slots_moved;
  j["erases"] = f.erases - baseline_.erases;
  j["padding_units"] = f.padding_slots - baseline_.padding_slots;
  j["trimmed_units"] = f.trimmed_slots - baseline_.trimmed_slots;
  j["write_buffer_hits"] = n_.write_buffer_hits;
  j["write_buffer_stall_ns"] = n_.write_buffer_stall_ns;
  j["unmapped_reads"] = n_.unmapped_reads;
  j["admission_wait_ns"] = n_.admission_wait_ns;
  j["read_admission_wait_ns"] = n_.read_admission_wait_ns;
  j["suspends"] = n_.suspends;
  j["suspends_refused"] = n_.suspends_refused;
  j["dropped_writes"] = f.dropped_writes;
  j["slc_bytes_in_use"] = slc_programs_ * program_bytes_;
  j["slc_capacity_bytes"] = slc_enabled_ ? SlcCapacityBytes() : 0;
  j["slc_bytes_written"] = n_.slc_bytes_written;
  j["slc_bytes_folded"] = n_.slc_bytes_folded;
  j["slc_bypass_bytes"] = n_.slc_bypass_bytes;
  j["reads_retried"] = n_.reads_retried;
  j["read_retry_rounds"] = n_.read_retry_rounds;
  std::vector<std::uint64_t> busy, free_blocks;
  for (std::uint32_t die = 0; die < dies_.size(); ++die) {
    busy.push_back(dies_[die].busy_ns);
    free_blocks.push_back(ftl_.free_blocks(die));
  }
  j["die_busy_ns"] = busy;
  j["die_free_blocks"] = free_blocks;
  j["memory_bytes"] = MemoryBytes();
  return j.dump();
}

std::uint64_t SsdModel::MemoryBytes() const {
  std::uint64_t bytes = sizeof(*this) + ftl_.MemoryBytes() +
                        dies_.capacity() * sizeof(DieTimeline) +
                        channel_busy_.capacity() * sizeof(ChannelBookings);
  for (const ChannelBookings& b : channel_busy_) {
    bytes += b.busy.capacity() * sizeof(std::pair<TimeNs, TimeNs>);
  }
  bytes += die_busy_until_.capacity() * sizeof(TimeNs) + channel_ns_.capacity() * sizeof(TimeNs);
  bytes += plane_read_busy_.capacity() * sizeof(TimeNs);
  bytes += slc_programs_on_die_.capacity() * sizeof(std::uint32_t);
  bytes +=
      (channel_queue_.size() + link_out_queue_.size()) * sizeof(Transfer) +
      reads_.MemoryBytes();
  for (const Pipeline* p : {&read_pipeline_, &write_pipeline_}) {
    bytes += p->slot_free.capacity() * sizeof(TimeNs) + p->queues.capacity() * sizeof(MinHeap);
    for (const MinHeap& q : p->queues) bytes += q.size() * sizeof(TimeNs);
  }
  for (const auto& d : dies_) {
    bytes += d.programs.capacity() * sizeof(InflightProgram) + d.pe_ops.capacity() * sizeof(PeOp);
  }
  return bytes;
}

}  // namespace internal
}  // namespace devmodel

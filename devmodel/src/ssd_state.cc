// SsdModel::SaveState / LoadState: the whole state of an SSD in use, for a
// saved model state (model_state.h says what it is). Kept apart from ssd.cc,
// which holds the model's timing.
#include <algorithm>
#include <string>

#include "ssd_model.h"

namespace devmodel::internal {
namespace {

// Every counter of SsdModel::Counters and FtlCounters, in a fixed order.
#define DEVMODEL_SSD_COUNTERS(X)                                                           \
  X(reads) X(writes) X(flushes) X(trims) X(host_bytes_read) X(host_bytes_written)         \
  X(nand_pages_read) X(write_buffer_hits) X(unmapped_reads) X(write_buffer_stall_ns)       \
  X(admission_wait_ns) X(gc_background_runs) X(suspends) X(suspends_refused)              \
  X(read_admission_wait_ns) X(gc_pages_read) X(slc_bytes_written) X(slc_bytes_folded)     \
  X(slc_bypass_bytes) X(read_retry_rounds) X(reads_retried)
#define DEVMODEL_FTL_COUNTERS(X)                                                    \
  X(host_slots_written) X(nand_slots_programmed) X(padding_slots) X(gc_runs)        \
  X(gc_slots_moved) X(erases) X(trimmed_slots) X(dropped_writes)

template <typename Heap>
void PutHeap(StateWriter* w, Heap heap) {  // by value: popped in order
  w->Put(heap.size());
  for (; !heap.empty(); heap.pop()) w->Put(heap.top());
}

template <typename Heap>
void GetHeap(StateReader* in, Heap* heap) {
  *heap = {};
  for (std::uint64_t k = 0, n = in->GetCount(); k < n; ++k) heap->push(in->Get());
}

void PutTimes(StateWriter* w, const std::vector<TimeNs>& v) {
  w->Put(v.size());
  for (TimeNs t : v) w->Put(t);
}

// Reads into `v`, whose size (from the profile) the saved one must equal.
bool GetTimes(StateReader* in, std::vector<TimeNs>* v) {
  if (in->Get() != v->size()) return false;
  for (TimeNs& t : *v) t = in->Get();
  return in->ok();
}

}  // namespace

bool SsdModel::SaveState(std::string* out, std::string* why) const {
  if (reads_.size() != 0) {
    *why = "SSD: " + std::to_string(reads_.size()) + " read(s) not final yet";
    return false;
  }
  StateWriter w(out);  // nothing below fails: straight into *out
  ftl_.SaveFullState(&w);
#define DEVMODEL_PUT(name) w.Put(baseline_.name);
  DEVMODEL_FTL_COUNTERS(DEVMODEL_PUT)
#undef DEVMODEL_PUT
  w.Put(dies_.size());
  for (const DieTimeline& d : dies_) {
    w.Put(d.read_busy_until);
    w.Put(d.busy_ns);
    w.Put(d.pe_ops.size());
    for (std::size_t i = 0; i < d.pe_ops.size(); ++i) {
      w.Put(d.pe_ops[i].start);
      w.Put(d.pe_ops[i].end);
    }
    w.Put(d.pe_shift);
    w.Put(d.front_suspends);
    w.Put(d.programs.size());
    for (std::size_t i = 0; i < d.programs.size(); ++i) {
      const InflightProgram& p = d.programs[i];
      for (std::uint64_t v : {std::uint64_t{p.block}, std::uint64_t{p.first_slot},
                              std::uint64_t{p.end_slot}, p.done}) {
        w.Put(v);
      }
    }
  }
  PutTimes(&w, die_busy_until_);
  w.Put(channel_busy_.size());
  for (const ChannelBookings& b : channel_busy_) {
    w.Put(b.busy.size() - b.head);  // those before head are over (BookChannel)
    for (std::size_t i = b.head; i < b.busy.size(); ++i) {
      w.Put(b.busy[i].first);
      w.Put(b.busy[i].second);
    }
  }
  PutTimes(&w, read_channel_busy_);
  w.Put(link_in_busy_);
  w.Put(link_out_busy_);
  for (TransferQueue q : {channel_queue_, link_out_queue_}) {
    w.Put(q.size());
    for (; !q.empty(); q.pop()) {
      const Transfer& t = q.top();
      for (std::uint64_t v : {t.ready, t.xfer, t.seq, t.tag, t.read_seq, std::uint64_t{t.channel}}) {
        w.Put(v);
      }
    }
  }
  w.Put(read_seq_);
  w.Put(page_seq_);
  PutHeap(&w, inflight_);
  for (const Pipeline* p : {&read_pipeline_, &write_pipeline_}) {
    PutTimes(&w, p->slot_free);
    w.Put(p->queues.size());
    for (const MinHeap& q : p->queues) PutHeap(&w, q);
  }
  PutTimes(&w, plane_read_busy_);
  std::uint64_t words[4];
  retry_rng_.SaveWords(words);
  for (std::uint64_t v : words) w.Put(v);
  w.Put(slc_programs_on_die_.size());
  for (std::uint32_t v : slc_programs_on_die_) w.Put(v);
  w.Put(slc_programs_);
  w.Put(submit_now_);
  w.Put(channel_prune_);
  auto releases = buffer_releases_;
  w.Put(releases.size());
  for (; !releases.empty(); releases.pop()) {
    w.Put(releases.top().first);
    w.Put(releases.top().second);
  }
  for (std::uint64_t v : {buffer_used_units_, dispatch_time_, call_program_done_,
                          last_program_done_, last_completion_,
                          std::uint64_t{gc_background_due_}}) {
    w.Put(v);
  }
#define DEVMODEL_PUT(name) w.Put(n_.name);
  DEVMODEL_SSD_COUNTERS(DEVMODEL_PUT)
#undef DEVMODEL_PUT
  return true;
}

bool SsdModel::LoadState(StateReader* in, std::string* why) {
  auto fail = [why](const std::string& what) {
    *why = "SSD state: " + what;
    return false;
  };
  if (c_.precondition != Precondition::kNone || ftl_.counters().host_slots_written != 0) {
    return fail("the model was preconditioned (REQUIRES a fresh drive)");
  }
  ftl_.set_listener(nullptr);
  std::string error;
  if (!ftl_.LoadFullState(in, &error)) return fail("FTL: " + error);
  ftl_.set_listener(this);
#define DEVMODEL_GET(name) baseline_.name = in->Get();
  DEVMODEL_FTL_COUNTERS(DEVMODEL_GET)
#undef DEVMODEL_GET
  if (in->Get() != dies_.size()) return fail("die count differs from the profile's");
  const std::uint32_t slots_per_block = ftl_.geometry().slots_per_block;
  for (DieTimeline& d : dies_) {
    d.read_busy_until = in->Get();
    d.busy_ns = in->Get();
    d.pe_ops = {};
    for (std::uint64_t k = 0, n = in->GetCount(2); k < n; ++k) {
      const TimeNs start = in->Get();
      d.pe_ops.push_back({start, in->Get()});
    }
    d.pe_shift = in->Get();
    const std::uint64_t suspends = in->Get();
    if (suspends > 0xFFFFFFFFu) return fail("bad suspend count");
    d.front_suspends = static_cast<std::uint32_t>(suspends);
    d.programs = {};
    for (std::uint64_t k = 0, n = in->GetCount(4); k < n; ++k) {
      const std::uint64_t block = in->Get(), first = in->Get(), end = in->Get();
      const TimeNs done = in->Get();
      if (block >= std::uint64_t{ftl_.geometry().dies} * ftl_.geometry().blocks_per_die ||
          first > end || end > slots_per_block) {
        return fail("a program outside its die");
      }
      d.programs.push_back({static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(first),
                            static_cast<std::uint32_t>(end), done});
    }
  }
  if (!GetTimes(in, &die_busy_until_)) return fail("die timelines differ from the profile's");
  if (in->Get() != channel_busy_.size()) return fail("channel count differs from the profile's");
  for (ChannelBookings& b : channel_busy_) {
    b.busy.clear();
    b.head = 0;
    for (std::uint64_t k = 0, n = in->GetCount(2); k < n; ++k) {
      const TimeNs start = in->Get();
      b.busy.emplace_back(start, in->Get());
    }
  }
  if (!GetTimes(in, &read_channel_busy_)) return fail("channels differ from the profile's");
  link_in_busy_ = in->Get();
  link_out_busy_ = in->Get();
  for (TransferQueue* q : {&channel_queue_, &link_out_queue_}) {
    *q = {};
    for (std::uint64_t k = 0, n = in->GetCount(6); k < n; ++k) {
      Transfer t{};
      t.ready = in->Get();
      t.xfer = in->Get();
      t.seq = in->Get();
      t.tag = in->Get();
      t.read_seq = in->Get();
      const std::uint64_t channel = in->Get();
      if (channel >= c_.channels) return fail("a transfer on no channel");
      t.channel = static_cast<std::uint32_t>(channel);
      q->push(t);
    }
  }
  read_seq_ = in->Get();
  page_seq_ = in->Get();
  GetHeap(in, &inflight_);
  for (Pipeline* p : {&read_pipeline_, &write_pipeline_}) {
    if (!GetTimes(in, &p->slot_free)) return fail("admission slots differ from the profile's");
    const std::uint64_t queues = in->GetCount();
    if (queues > kSsdArbitratedQueues) return fail("too many submission queues");
    p->queues.assign(queues, MinHeap());
    for (MinHeap& q : p->queues) GetHeap(in, &q);
  }
  if (!GetTimes(in, &plane_read_busy_)) return fail("planes differ from the profile's");
  std::uint64_t words[4];
  for (std::uint64_t& v : words) v = in->Get();
  retry_rng_.LoadWords(words);
  if (in->Get() != slc_programs_on_die_.size()) return fail("SLC cache differs from the profile's");
  std::uint64_t slc_total = 0;
  for (std::uint32_t& v : slc_programs_on_die_) {
    const std::uint64_t n = in->Get();
    if (n > 0xFFFFFFFFu) return fail("bad SLC unit count");
    v = static_cast<std::uint32_t>(n);
    slc_total += n;
  }
  slc_programs_ = in->Get();
  if (slc_programs_ != slc_total) return fail("SLC units differ from their dies' sum");
  submit_now_ = in->Get();
  channel_prune_ = in->Get();
  buffer_releases_ = {};
  for (std::uint64_t k = 0, n = in->GetCount(2); k < n; ++k) {
    const TimeNs done = in->Get();
    buffer_releases_.emplace(done, static_cast<std::uint32_t>(in->Get()));
  }
  for (std::uint64_t* v : {&buffer_used_units_, &dispatch_time_, &call_program_done_,
                           &last_program_done_, &last_completion_}) {
    *v = in->Get();
  }
  gc_background_due_ = in->Get() != 0;
#define DEVMODEL_GET(name) n_.name = in->Get();
  DEVMODEL_SSD_COUNTERS(DEVMODEL_GET)
#undef DEVMODEL_GET
  if (!in->ok()) return fail("truncated");
  return true;
}

}  // namespace devmodel::internal

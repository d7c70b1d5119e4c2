// C ABI over devmodel::Device; see include/devmodel/devmodel.h for the rules.
// Every entry point catches everything: no exception crosses into C.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "devmodel/device.h"
#include "devmodel/devmodel.h"
#include "devmodel/faults.h"
#include "devmodel/profile.h"
#include "checksum.h"
#include "devmodel/tag_map.h"
#include "model_state.h"
#include "state_cache.h"

namespace {

// Service time (final deadline minus submission time) of every request the
// model accepted, by op: what the device itself cost, whatever the model.
struct ServiceTime {
  uint64_t count = 0;
  uint64_t total_ns = 0;
  uint64_t max_ns = 0;

  void Add(uint64_t ns) {
    ++count;
    total_ns += ns;
    max_ns = std::max(max_ns, ns);
  }
};

constexpr const char* kOpNames[] = {"read", "write", "flush", "trim"};

}  // namespace

struct devmodel_t {
  std::unique_ptr<devmodel::Device> device;  // a FaultyDevice, faults or not
  devmodel::FaultyDevice* faulty = nullptr;  // the same object
  uint64_t last_now_ns = 0;
  ServiceTime service[DEVMODEL_OP_TRIM + 1];
  struct Pending {
    uint64_t submit_ns;
    uint32_t op;
  };
  devmodel::TagMap<Pending> pending;               // by tag, until final
  uint64_t media_errors[2] = {0, 0};              // reads, writes
  uint64_t lost[2] = {0, 0};                      // reads, writes
  uint64_t latest_final_ns = 0;  // latest final deadline given (not lost)
  // What devmodel_save_state records: the profile's identity and the seed.
  std::string profile_path;
  uint64_t profile_hash = 0;  // FNV-1a of the profile's text
  uint64_t seed = 0;
  // The model's clock minus the caller's (a model from devmodel_open_state).
  uint64_t clock_offset_ns = 0;
};

namespace {

char* CopyString(const std::string& s) {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (out != nullptr) std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

void SetError(char** errptr, const std::string& message) {
  std::free(*errptr);
  *errptr = CopyString(message);
}

// FNV-1a, 64 bits: a profile's identity in a state file.
uint64_t Fnv1a(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

bool ReadWholeFile(const std::string& path, std::string* text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) return false;
  *text = s.str();
  return true;
}

std::string Hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// A state file (format version 1), 8-byte words in host byte order (see
// StateWriter): magic, version, byte-order mark, library version and source
// hash, profile hash, model, capacity, logical block size, seed, the save
// instant on the model's clock, the C ABI's counters, the device's state,
// then a checksum of everything before it.
constexpr uint64_t kStateMagic = 0x4554415453444d44ull;  // "DMDSTATE"
constexpr uint64_t kStateVersion = 1;
constexpr uint64_t kByteOrderMark = 0x0102030405060708ull;

struct StateIdentity {
  uint64_t profile_hash;
  std::string model;
  uint64_t capacity;
  uint64_t block;
  std::string Describe() const {
    return "profile text hash " + Hex(profile_hash) + " (model " + model + ", capacity " +
           std::to_string(capacity) + " bytes, logical block " + std::to_string(block) + ")";
  }
};

StateIdentity IdentityOf(const devmodel_t* m) {
  std::string model = "?";
  try {
    model = nlohmann::json::parse(m->device->CountersJson()).value("model", "?");
  } catch (const std::exception&) {
  }
  return {m->profile_hash, model, m->device->capacity_bytes(), m->device->logical_block_bytes()};
}

// REQUIRES: bytes.size() % 8 == 0 (a state file is whole words).
uint64_t Checksum(std::string_view bytes) {
  devmodel::internal::Checksum c;
  c.Add(bytes.data(), bytes.size());
  return c.Value();
}

// The C ABI's own counters, in a fixed order.
template <typename Visit>
void VisitCounters(devmodel_t* m, Visit visit) {
  for (ServiceTime& t : m->service) {
    visit(&t.count);
    visit(&t.total_ns);
    visit(&t.max_ns);
  }
  for (uint64_t& v : m->media_errors) visit(&v);
  for (uint64_t& v : m->lost) visit(&v);
}

uint64_t Clamp(devmodel_t* m, uint64_t now_ns) {
  m->last_now_ns = std::max(m->last_now_ns, now_ns);
  return m->last_now_ns;
}

}  // namespace

extern "C" {

const char* devmodel_version(void) { return "0.1.0"; }

devmodel_t* devmodel_open(const char* profile_path, uint64_t seed, char** errptr) {
  return devmodel_open_cached(profile_path, seed, nullptr, errptr);
}

devmodel_t* devmodel_open_cached(const char* profile_path, uint64_t seed,
                                 const char* state_cache_dir, char** errptr) {
  try {
    std::string error;
    devmodel::LoadOptions options;
    if (state_cache_dir != nullptr) options.state_cache_dir = state_cache_dir;
    auto device = devmodel::LoadProfile(profile_path, seed, options, &error);
    if (device == nullptr) {
      SetError(errptr, error);
      return nullptr;
    }
    if (devmodel::FaultyDevice::Of(device.get()) == nullptr) {
      device = std::make_unique<devmodel::FaultyDevice>(std::move(device), devmodel::FaultSchedule());
    }
    auto* m = new devmodel_t;
    m->faulty = devmodel::FaultyDevice::Of(device.get());
    m->device = std::move(device);
    m->profile_path = profile_path;
    std::string text;
    if (ReadWholeFile(profile_path, &text)) m->profile_hash = Fnv1a(text);
    m->seed = seed;
    return m;
  } catch (const std::exception& e) {
    SetError(errptr, std::string(profile_path) + ": " + e.what());
  } catch (...) {
    SetError(errptr, std::string(profile_path) + ": unknown error");
  }
  return nullptr;
}

int devmodel_save_state(devmodel_t* model, uint64_t now_ns, const char* state_path,
                        char** errptr) {
  const uint64_t now = Clamp(model, now_ns);
  const std::string where = std::string("devmodel_save_state: ") + state_path + ": ";
  try {
    if (model->pending.size() != 0) {
      SetError(errptr, where + "not saved: " + std::to_string(model->pending.size()) +
                           " request(s) not final yet (save once the device holds none)");
      return 0;
    }
    if (model->latest_final_ns > now) {
      SetError(errptr, where + "not saved: a request completes at " +
                           std::to_string(model->latest_final_ns) + " ns, after the save instant " +
                           std::to_string(now) + " ns (save once every completion is delivered)");
      return 0;
    }
    std::string file, why;
    devmodel::internal::StateWriter w(&file);
    w.Put(kStateMagic);
    w.Put(kStateVersion);
    w.Put(kByteOrderMark);
    w.PutBytes(devmodel_version());
    w.PutBytes(devmodel::internal::DevmodelSourceHash());
    const StateIdentity id = IdentityOf(model);
    w.Put(id.profile_hash);
    w.PutBytes(id.model);
    w.Put(id.capacity);
    w.Put(id.block);
    w.Put(model->seed);
    w.Put(now + model->clock_offset_ns);  // the save instant, on the model's clock
    VisitCounters(model, [&w](uint64_t* v) { w.Put(*v); });
    // The device's state in place (as StateWriter::PutBytes would copy it):
    // its length, then its words.
    const std::size_t length_at = file.size();
    w.Put(0);
    if (!model->faulty->SaveState(&file, &why)) {
      SetError(errptr, where + "not saved: " + why);
      return 0;
    }
    const uint64_t payload_bytes = file.size() - length_at - 8;  // whole words
    std::memcpy(&file[length_at], &payload_bytes, 8);
    w.Put(Checksum(file));
    const std::string tmp = std::string(state_path) + ".tmp." + std::to_string(getpid());
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(file.data(), static_cast<std::streamsize>(file.size()));
      if (!out.flush()) {
        std::remove(tmp.c_str());
        SetError(errptr, where + "cannot be written");
        return 0;
      }
    }
    if (std::rename(tmp.c_str(), state_path) != 0) {
      std::remove(tmp.c_str());
      SetError(errptr, where + "cannot be written (rename failed)");
      return 0;
    }
    return 1;
  } catch (const std::exception& e) {
    SetError(errptr, where + e.what());
  } catch (...) {
    SetError(errptr, where + "unknown error");
  }
  return 0;
}

devmodel_t* devmodel_open_state(const char* profile_path, const char* state_path,
                                uint64_t now_ns, char** errptr) {
  const std::string where = std::string(state_path) + ": ";
  try {
    std::string file;
    if (!ReadWholeFile(state_path, &file)) {
      SetError(errptr, where + "cannot open file");
      return nullptr;
    }
    devmodel::internal::StateReader in(file);
    if (in.Get() != kStateMagic || !in.ok()) {
      SetError(errptr, where + "not a devmodel state file (no state file magic)");
      return nullptr;
    }
    const uint64_t version = in.Get();
    if (version != kStateVersion) {
      SetError(errptr, where + "state format version " + std::to_string(version) +
                           "; this library reads version " + std::to_string(kStateVersion));
      return nullptr;
    }
    const uint64_t byte_order = in.Get();
    uint64_t stored_sum = 0;
    if (file.size() % 8 != 0 || file.size() < 32 ||
        (std::memcpy(&stored_sum, file.data() + file.size() - 8, 8),
         stored_sum != Checksum(std::string_view(file).substr(0, file.size() - 8)))) {
      SetError(errptr, where + "damaged or truncated (" + std::to_string(file.size()) +
                           " bytes; its checksum does not match)");
      return nullptr;
    }
    if (byte_order != kByteOrderMark) {
      SetError(errptr, where + "saved on a host of another byte order");
      return nullptr;
    }
    const std::string lib_version(in.GetBytes());
    const std::string lib_hash(in.GetBytes());
    if (lib_version != devmodel_version() || lib_hash != devmodel::internal::DevmodelSourceHash()) {
      SetError(errptr, where + "saved by libdevmodel " + lib_version + " built from sources " +
                           lib_hash + "; this is libdevmodel " + devmodel_version() +
                           " built from sources " + devmodel::internal::DevmodelSourceHash() +
                           " (a state holds the model's internal layout: save it again with "
                           "this build)");
      return nullptr;
    }
    StateIdentity saved;
    saved.profile_hash = in.Get();
    saved.model = std::string(in.GetBytes());
    saved.capacity = in.Get();
    saved.block = in.Get();
    const uint64_t seed = in.Get();
    const uint64_t saved_at = in.Get();
    std::string text;
    if (!ReadWholeFile(profile_path, &text)) {
      SetError(errptr, std::string(profile_path) + ": cannot open file");
      return nullptr;
    }
    if (Fnv1a(text) != saved.profile_hash) {
      SetError(errptr, where + "saved for " + saved.Describe() + "; " + profile_path +
                           " has profile text hash " + Hex(Fnv1a(text)) +
                           " (a state belongs to the exact profile text it was saved with)");
      return nullptr;
    }
    std::string error;
    devmodel::LoadOptions options;
    options.without_precondition = true;
    auto device = devmodel::LoadProfileFromString(text, profile_path, seed, options, &error);
    if (device == nullptr) {
      SetError(errptr, error);
      return nullptr;
    }
    if (devmodel::FaultyDevice::Of(device.get()) == nullptr) {
      device = std::make_unique<devmodel::FaultyDevice>(std::move(device), devmodel::FaultSchedule());
    }
    auto m = std::make_unique<devmodel_t>();
    m->faulty = devmodel::FaultyDevice::Of(device.get());
    m->device = std::move(device);
    m->profile_path = profile_path;
    m->profile_hash = saved.profile_hash;
    m->seed = seed;
    const StateIdentity mine = IdentityOf(m.get());
    if (mine.model != saved.model || mine.capacity != saved.capacity ||
        mine.block != saved.block) {
      SetError(errptr, where + "saved for " + saved.Describe() + "; " + profile_path + " gives " +
                           mine.Describe());
      return nullptr;
    }
    VisitCounters(m.get(), [&in](uint64_t* v) { *v = in.Get(); });
    const std::string_view payload = in.GetBytes();
    in.Get();  // the checksum, checked above
    if (!in.AtEnd()) {
      SetError(errptr, where + "damaged (sections do not add up to the file)");
      return nullptr;
    }
    devmodel::internal::StateReader state(payload);
    if (!m->faulty->LoadState(&state, &error) || !state.AtEnd()) {
      SetError(errptr, where + "does not fit " + profile_path + ": " +
                           (error.empty() ? "state longer than the model's" : error));
      return nullptr;
    }
    m->clock_offset_ns = saved_at - now_ns;
    m->faulty->SetInnerClockOffset(m->clock_offset_ns);
    m->last_now_ns = now_ns;
    return m.release();
  } catch (const std::exception& e) {
    SetError(errptr, where + e.what());
  } catch (...) {
    SetError(errptr, where + "unknown error");
  }
  return nullptr;
}

void devmodel_close(devmodel_t* model) { delete model; }

uint64_t devmodel_capacity_bytes(const devmodel_t* model) {
  return model->device->capacity_bytes();
}

uint32_t devmodel_logical_block_bytes(const devmodel_t* model) {
  return model->device->logical_block_bytes();
}

uint32_t devmodel_rotation_rate(const devmodel_t* model) {
  return model->device->rotation_rate_rpm();
}

int devmodel_deadlines_final(const devmodel_t* model) {
  return model->device->deadlines_final() ? 1 : 0;
}

void devmodel_set_origin(devmodel_t* model, uint64_t now_ns) {
  model->faulty->SetOrigin(Clamp(model, now_ns));
}

namespace {

void SetResult(devmodel_t* m, const devmodel::Completion& c, uint64_t now, uint32_t op,
               devmodel_result* out) {
  out->deadline_ns = std::max(c.deadline_ns, now);
  out->final = c.final ? 1 : 0;
  out->status = DEVMODEL_STATUS_OK;
  if (c.final && c.status == devmodel::Status::kMediaError) {
    out->status = DEVMODEL_STATUS_MEDIA_ERROR;
    if (op <= DEVMODEL_OP_WRITE) ++m->media_errors[op];
  }
  if (c.final && c.status == devmodel::Status::kLost) {
    out->status = DEVMODEL_STATUS_LOST;
    if (op <= DEVMODEL_OP_WRITE) ++m->lost[op];
  } else if (c.final) {
    m->latest_final_ns = std::max(m->latest_final_ns, out->deadline_ns);
  }
}

void ToCompletion(const devmodel_result& r, devmodel_completion* out) {
  out->deadline_ns = r.deadline_ns;
  out->final = r.final;
}

}  // namespace

void devmodel_submit_result(devmodel_t* model, const devmodel_request* request, uint64_t now_ns,
                            devmodel_result* out, char** errptr) {
  const uint64_t now = Clamp(model, now_ns);
  out->deadline_ns = now;
  out->final = 1;
  out->status = DEVMODEL_STATUS_OK;
  try {
    if (request->op > DEVMODEL_OP_TRIM) {
      SetError(errptr, "devmodel_submit: unknown op " + std::to_string(request->op));
      return;
    }
    devmodel::Request r;
    r.op = static_cast<devmodel::Op>(request->op);
    r.offset_bytes = request->offset_bytes;
    r.length_bytes = request->length_bytes;
    r.queue_id = request->queue_id;
    r.tag = request->tag;
    if (const char* why = model->device->Check(r)) {
      SetError(errptr, std::string("devmodel_submit: ") + why);
      return;
    }
    SetResult(model, model->device->Submit(r, now), now, request->op, out);
    if (out->final && out->status == DEVMODEL_STATUS_LOST) {
      // Never completed: no service time.
    } else if (out->final) {
      model->service[request->op].Add(out->deadline_ns - now);
    } else {
      model->pending.Put(request->tag, {now, request->op});
    }
  } catch (const std::exception& e) {
    SetError(errptr, std::string("devmodel_submit: ") + e.what());
  } catch (...) {
    SetError(errptr, "devmodel_submit: unknown error");
  }
}

void devmodel_submit(devmodel_t* model, const devmodel_request* request, uint64_t now_ns,
                     devmodel_completion* out, char** errptr) {
  devmodel_result r;
  devmodel_submit_result(model, request, now_ns, &r, errptr);
  ToCompletion(r, out);
}

void devmodel_poll_result(devmodel_t* model, uint64_t tag, uint64_t now_ns, devmodel_result* out,
                          char** errptr) {
  const uint64_t now = Clamp(model, now_ns);
  out->deadline_ns = now;
  out->final = 1;
  out->status = DEVMODEL_STATUS_OK;
  try {
    const devmodel::Completion c = model->device->Poll(tag, now);
    auto it = model->pending.find(tag);
    const uint32_t op =
        it != model->pending.end() ? it->second.op : static_cast<uint32_t>(DEVMODEL_OP_FLUSH);
    SetResult(model, c, now, op, out);
    if (out->final && it != model->pending.end()) {
      if (out->status != DEVMODEL_STATUS_LOST) {
        model->service[it->second.op].Add(out->deadline_ns - it->second.submit_ns);
      }
      model->pending.Erase(it);
    }
  } catch (const std::exception& e) {
    SetError(errptr, std::string("devmodel_poll: ") + e.what());
  } catch (...) {
    SetError(errptr, "devmodel_poll: unknown error");
  }
}

void devmodel_poll(devmodel_t* model, uint64_t tag, uint64_t now_ns, devmodel_completion* out,
                   char** errptr) {
  devmodel_result r;
  devmodel_poll_result(model, tag, now_ns, &r, errptr);
  ToCompletion(r, out);
}

void devmodel_cancel(devmodel_t* model, uint64_t tag, uint64_t now_ns) {
  Clamp(model, now_ns);
  model->pending.Erase(tag);
  model->faulty->Cancel(tag);
}

int devmodel_failed(const devmodel_t* model, uint64_t now_ns) {
  return model->faulty->Failed(std::max(model->last_now_ns, now_ns)) ? 1 : 0;
}

void devmodel_host_reset(devmodel_t* model, uint64_t now_ns) {
  model->faulty->HostReset(Clamp(model, now_ns));
}

char* devmodel_counters_json(const devmodel_t* model, char** errptr) {
  try {
    nlohmann::json counters = nlohmann::json::parse(model->device->CountersJson());
    nlohmann::json& service = counters["service_ns"];
    for (uint32_t op = 0; op <= DEVMODEL_OP_TRIM; ++op) {
      const ServiceTime& t = model->service[op];
      service[kOpNames[op]] = {{"count", t.count}, {"total", t.total_ns}, {"max", t.max_ns}};
    }
    counters["media_errors"] = {{"read", model->media_errors[DEVMODEL_OP_READ]},
                                {"write", model->media_errors[DEVMODEL_OP_WRITE]}};
    counters["lost"] = {{"read", model->lost[DEVMODEL_OP_READ]},
                        {"write", model->lost[DEVMODEL_OP_WRITE]}};
    char* s = CopyString(counters.dump());
    if (s == nullptr) SetError(errptr, "devmodel_counters_json: out of memory");
    return s;
  } catch (const std::exception& e) {
    SetError(errptr, std::string("devmodel_counters_json: ") + e.what());
  } catch (...) {
    SetError(errptr, "devmodel_counters_json: unknown error");
  }
  return nullptr;
}

void devmodel_free(void* ptr) { std::free(ptr); }

}  // extern "C"

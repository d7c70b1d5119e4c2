// C ABI over devmodel::Device; see include/devmodel/devmodel.h for the rules.
// Every entry point catches everything: no exception crosses into C.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "devmodel/device.h"
#include "devmodel/devmodel.h"
#include "devmodel/faults.h"
#include "devmodel/profile.h"
#include "devmodel/tag_map.h"

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
    return m;
  } catch (const std::exception& e) {
    SetError(errptr, std::string(profile_path) + ": " + e.what());
  } catch (...) {
    SetError(errptr, std::string(profile_path) + ": unknown error");
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

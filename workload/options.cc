#include "options.h"

#include <algorithm>
#include <array>
#include <cstdio>

#include "units.h"

namespace blkgen {
namespace {

constexpr uint64_t kNsPerSec = 1000ULL * 1000 * 1000;
constexpr uint64_t kMaxIodepth = 65536;

// fio's default percentile list (stat.c).
constexpr std::array<double, 17> kFioDefaultPercentiles = {
    1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99};

Status WithOption(std::string_view name, std::string_view value, const Status& s) {
  if (s.ok()) return s;
  return Status::Usage(std::string(name) + "=" + std::string(value) + ": " + s.message());
}

Status ApplyName(std::string_view v, JobSpec* job) {
  if (v.empty()) return Status::Usage("name must not be empty");
  job->name = std::string(v);
  return Status::Ok();
}

Status ApplyFilename(std::string_view v, JobSpec* job) {
  if (v.empty()) return Status::Usage("filename must not be empty");
  if (v.find(':') != std::string_view::npos) {
    return Status::Usage("several files per job (':' in filename) are not supported yet");
  }
  job->filename = std::string(v);
  return Status::Ok();
}

Status ApplyRw(std::string_view v, JobSpec* job) {
  for (const RwModeInfo& info : kRwModes) {
    if (info.name == v) {
      if (!info.supported) return Status::Usage("not supported yet");
      job->rw = info.mode;
      return Status::Ok();
    }
  }
  return Status::Usage("unknown mode (read, write, randread, randwrite)");
}

// fio's "bs=R[,W[,T]]": missing trailing values repeat the last given one,
// empty ones keep the current value.
Status ApplyBs(std::string_view v, JobSpec* job) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t comma = v.find(',', start);
    parts.push_back(v.substr(start, comma == std::string_view::npos ? v.npos : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (parts.size() > kNumDirs) return Status::Usage("at most 3 values (read,write,trim)");
  std::array<uint64_t, kNumDirs> bs = job->bs;
  uint64_t last = 0;
  bool have_last = false;
  for (int d = 0; d < kNumDirs; ++d) {
    if (d < static_cast<int>(parts.size())) {
      if (parts[d].empty()) continue;
      uint64_t value;
      Status s = ParseSize(parts[d], &value);
      if (!s.ok()) return s;
      if (value == 0 || value > (1u << 30)) return Status::Usage("block size must be 1..1g");
      bs[d] = last = value;
      have_last = true;
    } else if (have_last) {
      bs[d] = last;
    }
  }
  job->bs = bs;
  return Status::Ok();
}

Status ApplySize(std::string_view v, JobSpec* job) { return ParseSize(v, &job->size); }

Status ApplyOffset(std::string_view v, JobSpec* job) { return ParseSize(v, &job->offset); }

Status ApplyIodepth(std::string_view v, JobSpec* job) {
  uint64_t depth;
  Status s = ParseUint(v, &depth);
  if (!s.ok()) return s;
  if (depth < 1 || depth > kMaxIodepth) return Status::Usage("iodepth must be 1..65536");
  job->iodepth = static_cast<uint32_t>(depth);
  return Status::Ok();
}

Status ApplyRuntime(std::string_view v, JobSpec* job) {
  return ParseDuration(v, kNsPerSec, &job->runtime_ns);
}

Status ApplyTimeBased(std::string_view v, JobSpec* job) { return ParseBool(v, &job->time_based); }

Status ApplyRampTime(std::string_view v, JobSpec* job) {
  return ParseDuration(v, kNsPerSec, &job->ramp_ns);
}

Status ApplyDirect(std::string_view v, JobSpec* job) { return ParseBool(v, &job->direct); }

Status ApplyIoengine(std::string_view v, JobSpec* job) {
  for (const EngineInfo& e : kEngines) {
    if (e.name == v) {
      job->ioengine = e.kind;
      return Status::Ok();
    }
  }
  if (v == "libaio" || v == "sync" || v == "pvsync" || v == "pvsync2" || v == "mmap" ||
      v == "posixaio" || v == "null") {
    return Status::Usage("not supported yet (io_uring, psync)");
  }
  return Status::Usage("unknown engine (io_uring, psync)");
}

Status ApplyRandseed(std::string_view v, JobSpec* job) { return ParseUint(v, &job->randseed); }

constexpr std::array<OptionDef, 13> kJobOptions = {{
    {"name", "", "job name; starts a new job", false, ApplyName},
    {"filename", "", "file or block device (default: <name>.0.0)", false, ApplyFilename},
    {"rw", "read", "read | write | randread | randwrite", false, ApplyRw},
    {"bs", "4k", "bytes per I/O, R[,W[,T]] (size: k=1024, kib=1000)", false, ApplyBs},
    {"size", "", "bytes of the I/O region (default: to end of file/device)", false, ApplySize},
    {"offset", "0", "bytes; start of the I/O region", false, ApplyOffset},
    {"iodepth", "1", "I/Os in flight, 1..65536 (1 for psync)", false, ApplyIodepth},
    {"runtime", "", "time limit (plain number = seconds; us, ms, s, m, h, d)", false, ApplyRuntime},
    {"time_based", "0", "0 | 1; repeat the region until runtime", true, ApplyTimeBased},
    {"ramp_time", "0", "time run before measuring starts (units as runtime)", false, ApplyRampTime},
    {"direct", "0", "0 | 1; open with O_DIRECT", false, ApplyDirect},
    {"ioengine", "psync", "psync | io_uring", false, ApplyIoengine},
    // fio's FIO_RANDSEED; the sequence itself differs from fio's.
    {"randseed", "0xb1899bed", "seed of the offset sequence (integer)", false, ApplyRandseed},
}};

// fio options blkgen is meant to take (issue 6) but does not implement yet;
// they are refused with a message saying so rather than "unknown".
constexpr std::array<std::string_view, 33> kNotYetSupported = {
    "rwmixread",
    "rwmixwrite",
    "bssplit",
    "blockalign",
    "iodepth_batch",
    "iodepth_batch_submit",
    "iodepth_batch_complete",
    "iodepth_batch_complete_min",
    "iodepth_batch_complete_max",
    "numjobs",
    "startdelay",
    "sqthread_poll",
    "fixedbufs",
    "rate_iops",
    "rate",
    "thinktime",
    "thinktime_blocks",
    "fsync",
    "fdatasync",
    "end_fsync",
    "random_distribution",
    "randrepeat",
    "norandommap",
    "group_reporting",
    "percentile_list",
    "prioclass",
    "prio",
    "cgroup",
    "verify",
    "stonewall",
    "thread",
    "directory",
    "lat_percentiles",
};

const OptionDef* FindJobOption(std::string_view name) {
  for (const OptionDef& o : kJobOptions) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

struct ProgramOptionDef {
  std::string_view name;
  std::string_view help;
  bool takes_value;
};

constexpr std::array<ProgramOptionDef, 4> kProgramOptions = {{
    {"output-format", "normal | json", true},
    {"output", "write the report to this file instead of stdout", true},
    {"help", "print this text", false},
    {"version", "print the version", false},
}};

const ProgramOptionDef* FindProgramOption(std::string_view name) {
  for (const ProgramOptionDef& o : kProgramOptions) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

Status ApplyProgramOption(std::string_view name, std::string_view value, ProgramOptions* program) {
  if (name == "output-format") {
    if (value == "json") {
      program->format = OutputFormat::kJson;
    } else if (value == "normal") {
      program->format = OutputFormat::kNormal;
    } else {
      return Status::Usage("output-format=" + std::string(value) +
                           " is not supported (json, normal)");
    }
  } else if (name == "output") {
    if (value.empty()) return Status::Usage("output must not be empty");
    program->output_path = std::string(value);
  } else if (name == "help") {
    program->show_help = true;
  } else if (name == "version") {
    program->show_version = true;
  }
  return Status::Ok();
}

// Records `name[=value]` in `given`: a repeated option keeps its first
// position and takes the last value.
void Remember(std::vector<GivenOption>* given, std::string_view name,
              const std::optional<std::string>& value) {
  for (GivenOption& g : *given) {
    if (g.first == name) {
      g.second = value;
      return;
    }
  }
  given->emplace_back(std::string(name), value);
}

Status ApplyAll(const std::vector<GivenOption>& options, JobSpec* job) {
  for (const GivenOption& g : options) {
    const OptionDef* def = FindJobOption(g.first);
    const std::string value = g.second.value_or("1");  // only value_optional ones lack one
    Status s = WithOption(g.first, value, def->apply(value, job));
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace

std::span<const OptionDef> JobOptionTable() { return kJobOptions; }

JobSpec DefaultJobSpec() {
  JobSpec job;
  for (const OptionDef& o : kJobOptions) {
    if (o.default_value.empty()) continue;
    Status s = o.apply(o.default_value, &job);
    if (!s.ok()) __builtin_trap();  // the table's own defaults must parse
  }
  job.percentiles.assign(kFioDefaultPercentiles.begin(), kFioDefaultPercentiles.end());
  return job;
}

Status ParseCommandLine(const std::vector<std::string>& args, CommandLine* out) {
  CommandLine cl;
  // Raw options per section; section 0 is global, then one per job.
  std::vector<std::vector<GivenOption>> sections(1);

  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() < 3 || arg[0] != '-' || arg[1] != '-') {
      if (!arg.empty() && arg[0] != '-') {
        return Status::Usage("job files are not supported yet: '" + arg + "'");
      }
      return Status::Usage("unknown option '" + arg + "'");
    }
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const bool has_value = eq != std::string::npos;
    std::string value = has_value ? arg.substr(eq + 1) : std::string();

    if (const ProgramOptionDef* p = FindProgramOption(name)) {
      if (p->takes_value && !has_value) {
        if (i + 1 >= args.size()) return Status::Usage("option '" + name + "' needs a value");
        value = args[++i];
      } else if (!p->takes_value && has_value) {
        return Status::Usage("option '" + name + "' takes no value");
      }
      Status s = ApplyProgramOption(name, value, &cl.program);
      if (!s.ok()) return s;
      continue;
    }

    const OptionDef* def = FindJobOption(name);
    if (def == nullptr) {
      for (std::string_view later : kNotYetSupported) {
        if (later == name) return Status::Usage("option '" + name + "' is not supported yet");
      }
      return Status::Usage("unknown option '" + name + "'");
    }
    bool flag_only = false;
    if (!has_value) {
      if (def->value_optional) {
        value = "1";
        flag_only = true;
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return Status::Usage("option '" + name + "' needs a value");
      }
    }
    // Check the value now so the error points at this argument.
    JobSpec scratch = DefaultJobSpec();
    Status s = WithOption(name, value, def->apply(value, &scratch));
    if (!s.ok()) return s;

    if (name == "name") sections.emplace_back();
    Remember(&sections.back(), name, flag_only ? std::nullopt : std::optional<std::string>(value));
  }

  if (cl.program.show_help || cl.program.show_version) {
    *out = std::move(cl);
    return Status::Ok();
  }
  if (sections.size() == 1) return Status::Usage("no job defined (use --name=<job>)");
  for (const GivenOption& g : sections[0]) {
    if (g.first == "name") continue;  // cannot happen: name opens a section
    Remember(&cl.global_options, g.first, g.second);
  }

  for (size_t j = 1; j < sections.size(); ++j) {
    JobSpec job = DefaultJobSpec();
    Status s = ApplyAll(cl.global_options, &job);
    if (s.ok()) s = ApplyAll(sections[j], &job);
    if (!s.ok()) return s;
    job.given = sections[j];
    if (job.time_based && job.runtime_ns == 0) {
      return Status::Usage("job '" + job.name + "': time_based needs runtime=");
    }
    if (job.ioengine == EngineKind::kPsync && job.iodepth > 1) {
      cl.notes.push_back("job '" + job.name + "': psync is synchronous, queue depth capped at 1");
      job.iodepth = 1;
    }
    cl.jobs.push_back(std::move(job));
  }
  *out = std::move(cl);
  return Status::Ok();
}

std::string HelpText() {
  std::string text =
      "usage: blkgen [program options] --name=<job> [job options] [--name=<job> ...]\n"
      "Job options before the first --name apply to every job.\n\nprogram options:\n";
  char line[256];
  for (const ProgramOptionDef& o : kProgramOptions) {
    std::snprintf(line, sizeof(line), "  --%-16.*s %.*s\n", int(o.name.size()), o.name.data(),
                  int(o.help.size()), o.help.data());
    text += line;
  }
  text += "\njob options (--opt=value):\n";
  for (const OptionDef& o : kJobOptions) {
    std::snprintf(line, sizeof(line), "  --%-16.*s %.*s", int(o.name.size()), o.name.data(),
                  int(o.help.size()), o.help.data());
    text += line;
    if (!o.default_value.empty()) {
      text += " [default: " + std::string(o.default_value) + "]";
    }
    text += "\n";
  }
  return text;
}

}  // namespace blkgen

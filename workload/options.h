// Command-line parsing in fio's syntax: `--opt=value`, a job starts at each
// `--name=`, options before the first `--name=` are global and apply to every
// job unless the job sets them itself. The option table here is the single
// source of option names, defaults and help; unknown or unsupported options
// are usage errors that name the option.
// Thread-safety: pure functions over immutable tables.
#ifndef BLKGEN_OPTIONS_H_
#define BLKGEN_OPTIONS_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "job_spec.h"
#include "status.h"

namespace blkgen {

// One fio job option known to blkgen.
struct OptionDef {
  std::string_view name;
  // Applied to every job before global and job options; empty = none.
  std::string_view default_value;
  std::string_view help;  // one line with units and accepted values
  // True if `--name` alone is accepted and means `--name=1` (fio's STR_SET).
  bool value_optional;
  Status (*apply)(std::string_view value, JobSpec* job);
};

// All job options, in help order.
std::span<const OptionDef> JobOptionTable();

enum class OutputFormat { kNormal, kJson };

struct ProgramOptions {
  OutputFormat format = OutputFormat::kNormal;
  std::string output_path;  // empty = stdout
  bool show_help = false;
  bool show_version = false;
};

struct CommandLine {
  ProgramOptions program;
  std::vector<GivenOption> global_options;  // as given, for the output
  std::vector<JobSpec> jobs;
  // Adjustments the user should hear about (fio prints them as "note:").
  std::vector<std::string> notes;
};

// A job with every table default applied and nothing else.
JobSpec DefaultJobSpec();

// Parses argv[1..] (without the program name). Errors are Status::Usage.
Status ParseCommandLine(const std::vector<std::string>& args, CommandLine* out);

// The text printed by --help, generated from the option tables.
std::string HelpText();

}  // namespace blkgen

#endif  // BLKGEN_OPTIONS_H_

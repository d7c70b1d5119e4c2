// Command-line and job-file parsing in fio's syntax. On the command line:
// `--opt=value`, a job starts at each `--name=`, options before the first
// `--name=` are global; any other argument is a job file (fio's ini format,
// see job_file.h). As in fio 3.33: command-line globals apply to every job,
// a job file's [global] sections apply to the file's jobs below them (and
// override command-line globals), command-line jobs come first, then the
// file's. numjobs=N expands a job into N clones after parsing.
//
// The option table here is the single source of option names, defaults and
// help; unknown or unsupported options are usage errors that name the
// option.
// Thread-safety: pure functions over immutable tables (file reading and the
// environment go through the ParseEnv passed in).
#ifndef BLKGEN_OPTIONS_H_
#define BLKGEN_OPTIONS_H_

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "job_file.h"
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
  // True for blkgen's own options, which fio does not have.
  bool blkgen_only = false;
};

// All job options, in help order.
std::span<const OptionDef> JobOptionTable();

// fio options blkgen refuses as "not supported yet".
std::span<const std::string_view> NotYetSupportedOptions();

enum class OutputFormat { kNormal, kJson };

inline constexpr std::string_view kDefaultCgroupRoot = "/sys/fs/cgroup";

struct ProgramOptions {
  OutputFormat format = OutputFormat::kNormal;
  std::string output_path;  // empty = stdout
  // Where cgroup v2 is mounted; tests point it at a directory of their own.
  std::string cgroup_root = std::string(kDefaultCgroupRoot);
  bool show_help = false;
  bool show_version = false;
  bool show_option_table = false;  // --option-table-json
};

struct CommandLine {
  ProgramOptions program;
  std::vector<GivenOption> global_options;  // as given, for the output
  std::vector<JobSpec> jobs;                // clones expanded
  // Adjustments the user should hear about (fio prints them as "note:").
  std::vector<std::string> notes;
};

// How the parser reads job files and the environment.
struct ParseEnv {
  // Reads the whole file; on failure returns a Status naming it.
  std::function<Status(const std::string& path, std::string* text)> read_file;
  EnvLookup getenv;
};
// Reads real files and the process environment.
ParseEnv SystemParseEnv();

// A job with every table default applied and nothing else.
JobSpec DefaultJobSpec();

// Parses argv[1..] (without the program name). Errors are Status::Usage.
Status ParseCommandLine(const std::vector<std::string>& args, const ParseEnv& env,
                        CommandLine* out);
// Same with SystemParseEnv().
Status ParseCommandLine(const std::vector<std::string>& args, CommandLine* out);

// The text printed by --help, generated from the option tables.
std::string HelpText();

}  // namespace blkgen

#endif  // BLKGEN_OPTIONS_H_

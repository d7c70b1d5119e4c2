#include "job_file.h"

#include <stdio.h>

namespace blkgen {
namespace {

std::string_view Trim(std::string_view s) {
  const char* blanks = " \t\r\n";
  const size_t b = s.find_first_not_of(blanks);
  if (b == std::string_view::npos) return {};
  const size_t e = s.find_last_not_of(blanks);
  return s.substr(b, e - b + 1);
}

Status LineError(const std::string& path, int line, const std::string& msg) {
  return Status::Usage(path + ":" + std::to_string(line) + ": " + msg);
}

// Replaces every ${NAME} in `value`.
Status Expand(const std::string& path, int line, std::string_view value, const EnvLookup& env,
              std::string* out) {
  out->clear();
  size_t pos = 0;
  while (pos < value.size()) {
    const size_t start = value.find("${", pos);
    if (start == std::string_view::npos) {
      out->append(value.substr(pos));
      break;
    }
    out->append(value.substr(pos, start - pos));
    const size_t end = value.find('}', start + 2);
    if (end == std::string_view::npos) return LineError(path, line, "unterminated '${'");
    const std::string name(value.substr(start + 2, end - start - 2));
    if (name.empty()) return LineError(path, line, "empty variable name in '${}'");
    if (const std::optional<std::string> v = env(name)) out->append(*v);
    pos = end + 1;
  }
  for (std::string_view keyword : {"$pagesize", "$mb_memory", "$ncpus"}) {
    if (out->find(keyword) != std::string::npos) {
      return LineError(path, line, "fio's " + std::string(keyword) + " keyword is not supported");
    }
  }
  return Status::Ok();
}

// "" if `line` is text, else what is wrong with it: a control character
// (other than tab and CR) or a byte that is not UTF-8. A binary file gets this
// one line rather than an error quoting its bytes.
std::string NonText(std::string_view line) {
  for (size_t i = 0; i < line.size();) {
    const auto c = static_cast<unsigned char>(line[i]);
    char what[80];
    if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f) {
      snprintf(what, sizeof what, "control character 0x%02x at column %zu", c, i + 1);
      return what;
    }
    int extra = c < 0x80 ? 0 : c >= 0xf5 ? -1 : c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc2 ? 1 : -1;
    for (int k = 1; k <= extra; ++k) {
      if (i + k >= line.size() || (static_cast<unsigned char>(line[i + k]) & 0xc0) != 0x80) {
        extra = -1;
        break;
      }
    }
    if (extra < 0) {
      snprintf(what, sizeof what, "byte 0x%02x at column %zu is not UTF-8", c, i + 1);
      return what;
    }
    i += 1 + extra;
  }
  return "";
}

}  // namespace

Status ParseJobFile(const std::string& path, std::string_view text, const EnvLookup& env,
                    std::vector<JobFileSection>* sections) {
  std::vector<JobFileSection> out;
  int line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view raw = text.substr(pos, nl - pos);
    const std::string_view line = Trim(raw);
    pos = nl + 1;
    ++line_no;
    if (const std::string bad = NonText(raw); !bad.empty()) {
      return LineError(path, line_no, "not a text job file: " + bad);
    }
    if (line.empty() || line[0] == ';' || line[0] == '#') continue;
    if (line[0] == '[') {
      if (line.back() != ']') return LineError(path, line_no, "section header without ']'");
      const std::string_view name = Trim(line.substr(1, line.size() - 2));
      if (name.empty()) return LineError(path, line_no, "empty section name");
      out.push_back(JobFileSection{std::string(name), line_no, {}});
      continue;
    }
    if (line.substr(0, 8) == "include " || line.substr(0, 8) == "include\t") {
      return LineError(path, line_no, "'include' is not supported");
    }
    if (out.empty()) {
      return LineError(path, line_no, "option outside a section: '" + std::string(line) + "'");
    }
    const size_t eq = line.find('=');
    const std::string_view key = Trim(line.substr(0, eq));
    if (key.empty()) return LineError(path, line_no, "option without a name");
    JobFileOption opt;
    opt.line = line_no;
    opt.option.first = std::string(key);
    if (eq != std::string_view::npos) {
      std::string value;
      Status s = Expand(path, line_no, Trim(line.substr(eq + 1)), env, &value);
      if (!s.ok()) return s;
      opt.option.second = std::move(value);
    }
    out.back().options.push_back(std::move(opt));
  }
  *sections = std::move(out);
  return Status::Ok();
}

}  // namespace blkgen

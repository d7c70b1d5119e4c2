#include "units.h"

#include <array>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <string>

namespace blkgen {
namespace {

constexpr uint64_t kNsPerUs = 1000;
constexpr uint64_t kNsPerSec = 1000 * 1000 * 1000;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool MulOverflows(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_mul_overflow(a, b, out);
}

// Splits `text` into leading digits (decimal, or hex after "0x") and the rest.
// Returns false if there are no digits or the number overflows.
bool SplitNumber(std::string_view text, uint64_t* number, std::string_view* rest) {
  int base = 10;
  size_t pos = 0;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    pos = 2;
  }
  uint64_t value = 0;
  size_t start = pos;
  for (; pos < text.size(); ++pos) {
    unsigned char c = static_cast<unsigned char>(text[pos]);
    int digit;
    if (std::isdigit(c)) {
      digit = c - '0';
    } else if (base == 16 && std::isxdigit(c)) {
      digit = std::tolower(c) - 'a' + 10;
    } else {
      break;
    }
    if (MulOverflows(value, base, &value) || __builtin_add_overflow(value, digit, &value)) {
      return false;
    }
  }
  if (pos == start) return false;
  *number = value;
  *rest = text.substr(pos);
  return true;
}

}  // namespace

std::string ErrnoMessage(const std::string& what, int err) {
  return what + ": " + std::strerror(err);
}

Status Status::Errno(const std::string& what, int err) {
  return Status(Code::kRuntime, ErrnoMessage(what, err), err);
}

Status ParseSize(std::string_view text, uint64_t* bytes) {
  uint64_t number;
  std::string_view rest;
  if (!SplitNumber(text, &number, &rest)) {
    return Status::Usage("bad size '" + std::string(text) + "'");
  }
  struct Suffix {
    const char* name;
    uint64_t multiplier;
  };
  static constexpr std::array<Suffix, 16> kSuffixes = {{
      {"", 1},
      {"k", 1ULL << 10},
      {"kb", 1ULL << 10},
      {"kib", 1000ULL},
      {"m", 1ULL << 20},
      {"mb", 1ULL << 20},
      {"mib", 1000ULL * 1000},
      {"g", 1ULL << 30},
      {"gb", 1ULL << 30},
      {"gib", 1000ULL * 1000 * 1000},
      {"t", 1ULL << 40},
      {"tb", 1ULL << 40},
      {"tib", 1000ULL * 1000 * 1000 * 1000},
      {"p", 1ULL << 50},
      {"pb", 1ULL << 50},
      {"pib", 1000ULL * 1000 * 1000 * 1000 * 1000},
  }};
  const std::string suffix = Lower(rest);
  for (const Suffix& s : kSuffixes) {
    if (suffix == s.name) {
      uint64_t value;
      if (MulOverflows(number, s.multiplier, &value)) {
        return Status::Usage("size '" + std::string(text) + "' is too large");
      }
      *bytes = value;
      return Status::Ok();
    }
  }
  if (suffix == "%") {
    return Status::Usage("size '" + std::string(text) + "': percentages are not supported yet");
  }
  return Status::Usage("bad size '" + std::string(text) + "': unknown suffix '" +
                       std::string(rest) + "'");
}

Status ParseDuration(std::string_view text, uint64_t default_unit_ns, uint64_t* ns) {
  uint64_t number;
  std::string_view rest;
  if (!SplitNumber(text, &number, &rest)) {
    return Status::Usage("bad time '" + std::string(text) + "'");
  }
  struct Suffix {
    const char* name;
    uint64_t ns;
  };
  static constexpr std::array<Suffix, 8> kSuffixes = {{
      {"us", kNsPerUs},
      {"usec", kNsPerUs},
      {"ms", 1000 * kNsPerUs},
      {"msec", 1000 * kNsPerUs},
      {"s", kNsPerSec},
      {"m", 60 * kNsPerSec},
      {"h", 3600 * kNsPerSec},
      {"d", 86400 * kNsPerSec},
  }};
  uint64_t unit = 0;
  const std::string suffix = Lower(rest);
  if (suffix.empty()) {
    unit = default_unit_ns;
  } else {
    for (const Suffix& s : kSuffixes) {
      if (suffix == s.name) unit = s.ns;
    }
  }
  if (unit == 0) {
    return Status::Usage("bad time '" + std::string(text) + "': unknown suffix '" +
                         std::string(rest) + "' (use us, ms, s, m, h or d)");
  }
  uint64_t value;
  if (MulOverflows(number, unit, &value)) {
    return Status::Usage("time '" + std::string(text) + "' is too large");
  }
  *ns = value;
  return Status::Ok();
}

Status ParseBool(std::string_view text, bool* value) {
  if (text == "1") {
    *value = true;
  } else if (text == "0") {
    *value = false;
  } else {
    return Status::Usage("bad boolean '" + std::string(text) + "' (use 0 or 1)");
  }
  return Status::Ok();
}

Status ParseUint(std::string_view text, uint64_t* value) {
  uint64_t number;
  std::string_view rest;
  if (!SplitNumber(text, &number, &rest) || !rest.empty()) {
    return Status::Usage("bad integer '" + std::string(text) + "'");
  }
  *value = number;
  return Status::Ok();
}

Status ParseDecimal(std::string_view text, double* value) {
  size_t digits = 0, dots = 0;
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      ++digits;
    } else if (c == '.') {
      ++dots;
    } else {
      digits = 0;
      break;
    }
  }
  if (digits == 0 || dots > 1) return Status::Usage("bad number '" + std::string(text) + "'");
  *value = std::strtod(std::string(text).c_str(), nullptr);
  return Status::Ok();
}

}  // namespace blkgen

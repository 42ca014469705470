#include "tokenizer/template_json.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace zt {
namespace {

// Python's repr of a float: the shortest digits that read back the same, in positional notation
// for decimal exponents from -4 to 15 (with ".0" when whole), else as d.ddde+XX.
std::string python_float(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "Infinity" : "-Infinity";
  char buffer[64];
  const auto end = std::to_chars(buffer, buffer + sizeof(buffer), x, std::chars_format::scientific).ptr;
  const std::string_view sci(buffer, size_t(end - buffer));  // [-]d[.ddd]e±XX
  const size_t e = sci.find('e');
  const int exponent = std::stoi(std::string(sci.substr(e + 1)));
  const bool negative = sci.front() == '-';
  std::string digits;
  for (char c : sci.substr(negative ? 1 : 0, e - (negative ? 1 : 0)))
    if (c != '.') digits += c;
  std::string out = negative ? "-" : "";
  if (exponent < -4 || exponent >= 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    return out + fmt::format("e{}{:02d}", exponent < 0 ? '-' : '+', std::abs(exponent));
  }
  if (exponent < 0) return out + "0." + std::string(size_t(-exponent - 1), '0') + digits;
  const size_t whole = size_t(exponent) + 1;
  if (digits.size() <= whole) return out + digits + std::string(whole - digits.size(), '0') + ".0";
  return out + digits.substr(0, whole) + "." + digits.substr(whole);
}

void write(std::string& out, const nlohmann::ordered_json& v, int indent, int depth) {
  using Type = nlohmann::ordered_json::value_t;
  const std::string newline = indent < 0 ? "" : "\n" + std::string(size_t(indent * (depth + 1)), ' ');
  const std::string close = indent < 0 ? "" : "\n" + std::string(size_t(indent * depth), ' ');
  const char* separator = indent < 0 ? ", " : ",";
  switch (v.type()) {
    case Type::object: {
      if (v.empty()) {
        out += "{}";
        return;
      }
      out += "{";
      bool first = true;
      for (const auto& [key, item] : v.items()) {
        out += (first ? "" : separator) + newline + template_json_string(key) + ": ";
        write(out, item, indent, depth + 1);
        first = false;
      }
      out += close + "}";
      return;
    }
    case Type::array: {
      if (v.empty()) {
        out += "[]";
        return;
      }
      out += "[";
      for (size_t i = 0; i < v.size(); ++i) {
        out += (i ? separator : "") + newline;
        write(out, v[i], indent, depth + 1);
      }
      out += close + "]";
      return;
    }
    case Type::string: out += template_json_string(v.get_ref<const std::string&>()); return;
    case Type::number_float: out += python_float(v.get<double>()); return;
    case Type::boolean: out += v.get<bool>() ? "true" : "false"; return;
    case Type::null: out += "null"; return;
    default: out += v.dump(); return;  // integers
  }
}

}  // namespace

std::string template_json_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20)
          out += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
        else
          out += c;
    }
  }
  return out + "\"";
}

std::string template_json(const nlohmann::ordered_json& value, int indent) {
  std::string out;
  write(out, value, indent, 0);
  return out;
}

}  // namespace zt

#pragma once
// A small XML reader for tests: checks that a document is well-formed (one root element, tags that
// nest and close, quoted and unique attributes, only the predefined or numeric entities, no '<' in
// text or attribute values) and returns its element tree. Enough for the SVG that zerotrain writes
// and no more: no DTDs, no CDATA, no namespaces resolved.
#include <cctype>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace zt::test {

struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attributes;  // entities already replaced
  std::vector<XmlElement> children;
  std::string text;  // the character data directly inside, entities replaced

  // Every element named `name` in this subtree, this one included, in document order.
  void find_all(const std::string& wanted, std::vector<const XmlElement*>& out) const {
    if (name == wanted) out.push_back(this);
    for (const auto& c : children) c.find_all(wanted, out);
  }
  std::vector<const XmlElement*> find_all(const std::string& wanted) const {
    std::vector<const XmlElement*> out;
    find_all(wanted, out);
    return out;
  }
};

class XmlReader {
public:
  explicit XmlReader(const std::string& text) : s_(text) {}

  XmlElement document() {
    skip_misc();
    if (!starts("<")) error("expected the root element");
    XmlElement root = element();
    skip_misc();
    if (pos_ != s_.size()) error("content after the root element");
    return root;
  }

private:
  [[noreturn]] void error(const std::string& what) const {
    throw std::runtime_error("XML not well-formed at byte " + std::to_string(pos_) + ": " + what);
  }
  bool starts(const char* p) const { return s_.compare(pos_, std::char_traits<char>::length(p), p) == 0; }
  void expect(const char* p) {
    if (!starts(p)) error(std::string("expected '") + p + "'");
    pos_ += std::char_traits<char>::length(p);
  }
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  // Whitespace, comments and processing instructions (the XML declaration) outside the root.
  void skip_misc() {
    for (;;) {
      skip_space();
      if (starts("<?")) skip_until("?>");
      else if (starts("<!--")) skip_until("-->");
      else return;
    }
  }
  void skip_until(const char* end) {
    auto at = s_.find(end, pos_);
    if (at == std::string::npos) error(std::string("unterminated, expected '") + end + "'");
    pos_ = at + std::char_traits<char>::length(end);
  }
  static bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }
  static bool name_char(char c) {
    return name_start(c) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.';
  }
  std::string name() {
    if (pos_ >= s_.size() || !name_start(s_[pos_])) error("expected a name");
    size_t begin = pos_;
    while (pos_ < s_.size() && name_char(s_[pos_])) ++pos_;
    return s_.substr(begin, pos_ - begin);
  }
  // Character data of an element, up to the next tag, with entities replaced.
  std::string text() {
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '<') {
      if (s_[pos_] == '&') out += entity();
      else out += s_[pos_++];
    }
    return out;
  }
  std::string attribute_value(char quote) {
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != quote) {
      if (s_[pos_] == '<') error("'<' in an attribute value");
      if (s_[pos_] == '&') out += entity();
      else out += s_[pos_++];
    }
    return out;
  }
  std::string entity() {
    auto end = s_.find(';', pos_);
    if (end == std::string::npos || end - pos_ > 10) error("'&' that does not start an entity");
    const std::string e = s_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
    static const std::map<std::string, std::string> known = {
        {"amp", "&"}, {"lt", "<"}, {"gt", ">"}, {"quot", "\""}, {"apos", "'"}};
    if (auto it = known.find(e); it != known.end()) return it->second;
    if (e.size() > 1 && e[0] == '#') {
      const bool hex = e[1] == 'x';
      const std::string digits = e.substr(hex ? 2 : 1);
      if (digits.empty()) error("empty character reference");
      for (char c : digits)
        if (!(hex ? std::isxdigit(static_cast<unsigned char>(c)) : std::isdigit(static_cast<unsigned char>(c))))
          error("bad character reference &" + e + ";");
      return "?";
    }
    error("unknown entity &" + e + ";");
  }
  XmlElement element() {
    expect("<");
    XmlElement el;
    el.name = name();
    for (;;) {
      const size_t before = pos_;
      skip_space();
      if (starts("/>")) {
        pos_ += 2;
        return el;
      }
      if (starts(">")) {
        ++pos_;
        break;
      }
      if (pos_ == before) error("expected whitespace before an attribute");
      std::string key = name();
      skip_space();
      expect("=");
      skip_space();
      if (pos_ >= s_.size() || (s_[pos_] != '"' && s_[pos_] != '\'')) error("attribute value without quotes");
      const char quote = s_[pos_++];
      std::string value = attribute_value(quote);
      expect(quote == '"' ? "\"" : "'");
      if (!el.attributes.emplace(key, value).second) error("attribute " + key + " given twice");
    }
    for (;;) {
      el.text += text();
      if (pos_ >= s_.size()) error("element <" + el.name + "> is not closed");
      if (starts("</")) {
        pos_ += 2;
        if (name() != el.name) error("closing tag does not match <" + el.name + ">");
        skip_space();
        expect(">");
        return el;
      }
      if (starts("<!--")) skip_until("-->");
      else if (starts("<?")) skip_until("?>");
      else el.children.push_back(element());
    }
  }

  const std::string& s_;
  size_t pos_ = 0;
};

// Throws std::runtime_error naming the byte offset of the first problem.
inline XmlElement parse_xml(const std::string& text) { return XmlReader(text).document(); }

}  // namespace zt::test

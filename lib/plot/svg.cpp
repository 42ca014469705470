#include "plot/svg.hpp"

#include <fmt/format.h>

namespace zt::plot {

std::string xml_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // Control characters other than tab and newline are not allowed in XML 1.0.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') out += '?';
        else out += c;
    }
  }
  return out;
}

Svg::Svg(double width, double height) {
  out_ = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n",
      width, height);
  rect(0, 0, width, height, "white");
}

void Svg::line(double x1, double y1, double x2, double y2, std::string_view stroke, double width,
               std::string_view dash) {
  out_ += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"{}\"",
                      x1, y1, x2, y2, stroke, width);
  if (!dash.empty()) out_ += fmt::format(" stroke-dasharray=\"{}\"", dash);
  out_ += "/>\n";
}

void Svg::rect(double x, double y, double w, double h, std::string_view fill, std::string_view stroke) {
  out_ += fmt::format(
      "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\" stroke=\"{}\"/>\n", x, y, w,
      h, fill, stroke);
}

void Svg::circle(double cx, double cy, double r, std::string_view fill) {
  // A white rim keeps the dot visible on a line of its own colour.
  out_ += fmt::format(
      "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\" fill=\"{}\" stroke=\"white\" stroke-width=\"1\"/>\n", cx, cy,
      r, fill);
}

void Svg::text(double x, double y, std::string_view content, std::string_view anchor, double size, double rotate,
               std::string_view weight) {
  out_ += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"{}\" text-anchor=\"{}\"", x, y, size, anchor);
  if (weight != "normal") out_ += fmt::format(" font-weight=\"{}\"", weight);
  if (rotate != 0) out_ += fmt::format(" transform=\"rotate({} {:.1f} {:.1f})\"", rotate, x, y);
  out_ += fmt::format(">{}</text>\n", xml_escape(content));
}

void Svg::path(std::string_view d, std::string_view stroke, double width, std::string_view dash,
               std::string_view title) {
  out_ += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" stroke-linejoin=\"round\"", d,
                      stroke, width);
  if (!dash.empty()) out_ += fmt::format(" stroke-dasharray=\"{}\"", dash);
  if (title.empty()) out_ += "/>\n";
  else out_ += fmt::format("><title>{}</title></path>\n", xml_escape(title));
}

std::string Svg::finish() { return out_ + "</svg>\n"; }

}  // namespace zt::plot

#pragma once
// A minimal SVG writer: the few elements a line chart needs, with text and attributes escaped.
#include <string>
#include <string_view>

namespace zt::plot {

std::string xml_escape(std::string_view text);  // & < > " '

class Svg {
public:
  Svg(double width, double height);
  void line(double x1, double y1, double x2, double y2, std::string_view stroke, double width = 1,
            std::string_view dash = "");
  void rect(double x, double y, double w, double h, std::string_view fill, std::string_view stroke = "none");
  // anchor: start | middle | end. rotate: degrees about (x, y).
  void text(double x, double y, std::string_view content, std::string_view anchor = "start", double size = 12,
            double rotate = 0, std::string_view weight = "normal");
  void circle(double cx, double cy, double r, std::string_view fill);
  // A path of line segments; `d` is its data ("M1,2L3,4...").
  void path(std::string_view d, std::string_view stroke, double width, std::string_view dash = "",
            std::string_view title = "");
  std::string finish();  // the document

private:
  std::string out_;
};

}  // namespace zt::plot

#pragma once
// `zerotrain plot`: training curves of one or more runs as one self-contained SVG, four charts
// against the step (loss with validation, learning rate, gradient norm, throughput), and two more
// for preference training (the rewards' accuracy and margin, with validation), runs overlaid in
// colours, one <path> per series.
#include <string>
#include <vector>

#include "plot/run_curves.hpp"

namespace zt::plot {

std::string curves_svg(const std::vector<RunCurves>& runs);

// Reads every metrics file, writes the SVG to `out`. Throws zt::Error naming the file at fault.
void plot_metrics_files(const std::vector<std::string>& metrics_files, const std::string& out);

}  // namespace zt::plot

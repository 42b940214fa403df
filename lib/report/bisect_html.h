#pragma once
// `nvdet bisect --format html`: one self-contained page (no network) with the two contexts, the
// first op whose bits differ, the first argmax flip, both completions, and how the difference
// grew: the max |diff| per layer per step as a table and as an SVG plot (log scale).
// It renders the JSON that bisect_to_json() produces, so it needs nothing from the model code.
#include <nlohmann/json.hpp>
#include <string>

namespace nvdet {

std::string render_bisect_html(const nlohmann::json& bisect);

}  // namespace nvdet

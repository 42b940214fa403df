// The folders' layering, checked on the sources: lib/CMakeLists.txt declares which folders each
// lib/ folder may include (its nvdet_layer DEPS, written to the build's layers.txt) and compiles
// each folder against an include tree of just those; these tests read every source file and say,
// in one line per offence, where a file reaches past its layer, where a third-party header
// (yaml-cpp, xxHash, CUDA, Abseil) is used outside the folder it belongs to, where the kernels'
// namespace splits, and whether the folder graph has a cycle.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

namespace fs = std::filesystem;
using Graph = std::map<std::string, std::set<std::string>>;

struct Include {
  std::string file;    // "lib/runner/audit.cpp"
  std::string header;  // "lib/core/error.h" or "<yaml-cpp/yaml.h>"
};

// The folder a repository path belongs to: "lib/<name>" or its top-level folder.
std::string folder_of(const std::string& path) {
  const size_t first = path.find('/');
  if (first == std::string::npos) return "";
  if (path.rfind("lib/", 0) == 0) {
    const size_t second = path.find('/', first + 1);
    return second == std::string::npos ? "" : path.substr(0, second);
  }
  return path.substr(0, first);
}

std::vector<Include> includes_of_sources() {
  static const std::regex include_line(R"(^\s*#\s*include\s*([<"][^>"]+[>"]))");
  std::vector<Include> out;
  for (const char* top : {"lib", "kernels"}) {
    for (const auto& entry : fs::recursive_directory_iterator(source_dir() / top)) {
      const std::string ext = entry.path().extension().string();
      const bool source = ext == ".h" || ext == ".cpp" || ext == ".cu" || ext == ".cuh";
      if (!entry.is_regular_file() || !source) continue;
      const std::string rel = fs::relative(entry.path(), source_dir()).generic_string();
      std::istringstream in(read_file(entry.path()));
      for (std::string line; std::getline(in, line);) {
        std::smatch m;
        if (!std::regex_search(line, m, include_line)) continue;
        std::string h = m[1].str();
        if (h[0] == '"') h = h.substr(1, h.size() - 2);
        out.push_back({rel, h});
      }
    }
  }
  return out;
}

// folder -> the folders it names in DEPS, from the build's layers.txt.
Graph declared_layers() {
  Graph g;
  std::istringstream in(read_file(NVDET_LAYERS_FILE));
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string name = line.substr(0, colon);
    const std::string folder = name == "kernels" ? "kernels" : "lib/" + name;
    std::istringstream deps(line.substr(colon + 1));
    g[folder];
    for (std::string d; deps >> d;) g[folder].insert(d == "kernels" ? d : "lib/" + d);
  }
  return g;
}

std::set<std::string> closure(const Graph& g, const std::string& from) {
  std::set<std::string> seen{from};
  std::vector<std::string> todo{from};
  while (!todo.empty()) {
    const std::string f = todo.back();
    todo.pop_back();
    const auto it = g.find(f);
    if (it == g.end()) continue;
    for (const std::string& d : it->second)
      if (seen.insert(d).second) todo.push_back(d);
  }
  return seen;
}

// A cycle of folders as "a -> b -> a", or "" when the graph has none.
std::string find_cycle(const Graph& g) {
  std::map<std::string, int> state;  // 0 new, 1 on the path, 2 done
  std::vector<std::string> path;
  std::string found;
  std::function<bool(const std::string&)> visit = [&](const std::string& f) {
    state[f] = 1;
    path.push_back(f);
    const auto it = g.find(f);
    if (it != g.end()) {
      for (const std::string& d : it->second) {
        if (state[d] == 1) {
          for (auto p = std::find(path.begin(), path.end(), d); p != path.end(); ++p)
            found += *p + " -> ";
          found += d;
          return true;
        }
        if (state[d] == 0 && visit(d)) return true;
      }
    }
    path.pop_back();
    state[f] = 2;
    return false;
  };
  for (const auto& [f, deps] : g)
    if (state[f] == 0 && visit(f)) return found;
  return "";
}

// The folder graph of the includes (no exception: no folder includes upwards).
Graph include_graph(const std::vector<Include>& includes) {
  Graph g;
  for (const Include& inc : includes) {
    const std::string from = folder_of(inc.file), to = folder_of(inc.header);
    if (to.empty() || to == from) continue;
    g[from].insert(to);
  }
  return g;
}

// The offences against the declared layers: one line each.
std::vector<std::string> layer_offences(const std::vector<Include>& includes, const Graph& layers) {
  std::vector<std::string> out;
  for (const Include& inc : includes) {
    const std::string from = folder_of(inc.file), to = folder_of(inc.header);
    if (to.empty() || inc.header.find('/') == std::string::npos || inc.header[0] == '<') continue;
    if (to != "kernels" && to.rfind("lib/", 0) != 0) {
      out.push_back(inc.file + " includes " + inc.header + " (outside lib/ and kernels/)");
      continue;
    }
    if (!layers.count(from)) {
      out.push_back(from + " has no nvdet_layer() entry in lib/CMakeLists.txt");
      continue;
    }
    if (!closure(layers, from).count(to))
      out.push_back(inc.file + " includes " + inc.header + ", but " + from + " may not use " + to);
  }
  return out;
}

TEST(Layers, EveryIncludeStaysWithinItsFoldersDeclaredLayers) {
  const Graph layers = declared_layers();
  ASSERT_TRUE(layers.count("lib/core") && layers.count("kernels")) << NVDET_LAYERS_FILE;
  for (const auto& entry : fs::directory_iterator(source_dir() / "lib"))
    if (entry.is_directory())
      EXPECT_TRUE(layers.count("lib/" + entry.path().filename().string())) << entry.path();
  EXPECT_TRUE(layers.at("kernels").empty()) << "kernels/ must depend on nothing";
  const std::vector<std::string> offences = layer_offences(includes_of_sources(), layers);
  for (const std::string& o : offences) ADD_FAILURE() << o;
}

TEST(Layers, KernelsIncludeNothingFromLib) {
  for (const Include& inc : includes_of_sources())
    if (inc.file.rfind("kernels/", 0) == 0)
      EXPECT_NE(inc.header.rfind("lib/", 0), 0u) << inc.file << " includes " << inc.header;
}

TEST(Layers, TheFolderGraphHasNoCycle) {
  const std::string cycle = find_cycle(include_graph(includes_of_sources()));
  EXPECT_EQ(cycle, "") << "folder cycle: " << cycle;
  // The declared table too: a folder may not name, directly or not, a folder that names it
  // (cudnn/ uses cuda/, so cuda/ may not use cudnn/; the registry collects both from below).
  const std::string declared = find_cycle(declared_layers());
  EXPECT_EQ(declared, "") << "lib/CMakeLists.txt declares a cycle: " << declared;
}

// Third-party headers stay in the one folder (or file) that wraps them.
TEST(Layers, ThirdPartyHeadersStayWhereTheyBelong) {
  for (const Include& inc : includes_of_sources()) {
    const std::string& h = inc.header;
    const std::string folder = folder_of(inc.file);
    if (h.rfind("<yaml-cpp/", 0) == 0)
      EXPECT_EQ(inc.file, "lib/loader/scenario_loader.cpp") << "yaml-cpp in " << inc.file;
    if (h == "<xxhash.h>") EXPECT_EQ(folder, "lib/hash") << "xxHash in " << inc.file;
    if (h.rfind("<re2/", 0) == 0) EXPECT_EQ(folder, "lib/scenario") << "RE2 in " << inc.file;
    if (h.rfind("<curl/", 0) == 0)
      EXPECT_EQ(inc.file, "lib/probe/http_client.cpp") << "libcurl in " << inc.file;
    const bool cuda = h.rfind("<cuda", 0) == 0 || h.rfind("<cublas", 0) == 0 ||
                      h.rfind("<cudnn", 0) == 0 || h.rfind("<nv", 0) == 0 ||
                      h.rfind("<cooperative_groups", 0) == 0 || h.rfind("<cub/", 0) == 0;
    if (cuda)
      EXPECT_TRUE(folder == "lib/cuda" || folder == "lib/cudnn" || folder == "kernels")
          << "CUDA header " << h << " in " << inc.file;
    if (h.rfind("<nccl", 0) == 0)
      EXPECT_EQ(inc.file, "lib/cuda/nccl_allreduce.cpp") << "NCCL in " << inc.file;
    if (h.rfind("<absl/", 0) == 0)
      EXPECT_NE(folder, "kernels") << "Abseil in " << inc.file << " (nvcc compiles kernels/)";
  }
}

// One kernel namespace: nvdet::kernels (its portable arithmetic in nvdet::kernels::portable, so
// that portable's add/max/exp never shadow CUDA's in the other kernels).
TEST(Layers, KernelsLiveInOneNamespace) {
  static const std::regex ns(R"(^\s*namespace[ \t]+([A-Za-z_][A-Za-z_0-9:]*)[ \t]*\{)");
  int named = 0;
  for (const auto& entry : fs::directory_iterator(source_dir() / "kernels")) {
    std::istringstream in(read_file(entry.path()));
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (!std::regex_search(line, m, ns)) continue;
      ++named;
      EXPECT_TRUE(m[1] == "nvdet::kernels" || m[1] == "nvdet::kernels::portable")
          << entry.path().filename() << " opens namespace " << m[1];
    }
  }
  EXPECT_GT(named, 10);  // the scan sees the kernels' namespaces at all
}

// The checks above can fail: a made-up cycle and a made-up upward include are found.
TEST(Layers, TheChecksCatchACycleAndAnUpwardInclude) {
  const Graph cyclic = {{"lib/a", {"lib/b"}}, {"lib/b", {"lib/c"}}, {"lib/c", {"lib/a"}}};
  EXPECT_EQ(find_cycle(cyclic), "lib/a -> lib/b -> lib/c -> lib/a");
  EXPECT_EQ(find_cycle({{"lib/a", {"lib/b"}}, {"lib/b", {}}}), "");
  const Graph layers = {{"lib/core", {}}, {"lib/runner", {"lib/core"}}, {"kernels", {}}};
  const std::vector<Include> includes = {{"lib/core/x.cpp", "lib/runner/audit.h"},
                                         {"kernels/k.cu", "lib/core/dtype.h"},
                                         {"lib/runner/y.cpp", "lib/core/error.h"}};
  const std::vector<std::string> offences = layer_offences(includes, layers);
  ASSERT_EQ(offences.size(), 2u);
  EXPECT_EQ(offences[0],
            "lib/core/x.cpp includes lib/runner/audit.h, but lib/core may not use "
            "lib/runner");
  EXPECT_EQ(offences[1],
            "kernels/k.cu includes lib/core/dtype.h, but kernels may not use lib/core");
}

}  // namespace
}  // namespace nvdet::testing

// op model's check of a scenario (the op table's OpSpec::check): the model's shape and every tp
// the sweep names, judged from config.json (or the synthetic architecture) alone, no weight read,
// so that an audit of several scenarios refuses a tp that does not divide the heads, or tp > 1 on
// a mixture of experts, before its first scenario runs.
#include "lib/backend/backend.h"
#include "lib/core/error.h"
#include "lib/core/text_excerpt.h"
#include "lib/model/checkpoint.h"
#include "lib/model/model_config.h"
#include "lib/model/tp_engine.h"
#include "lib/scenario/typo_hint.h"
#include "lib/workloads/tp_gemm.h"
#include "lib/workloads/workload.h"

namespace nvdet {

void check_model_scenario(const Scenario& s) {
  // The trainer by name (what it computes and whether it runs here: check_trainer, before a run).
  if (const std::string& name = s.model.trainer_backend; !name.empty() && !find_backend(name)) {
    std::vector<std::string> names;
    for (const auto& r : backend_registry()) names.push_back(r.info.name);
    throw_input_error(s.model.trainer_where, "'model.trainer' names an unknown backend '" +
                                                 excerpt(name) + "'" + typo_hint(name, names));
  }
  ModelConfig c;
  if (s.model.checkpoint.empty()) {
    c = config_from_spec(s.model);
    validate_config(c, s.path);
  } else {
    c = read_hf_config(s.model.checkpoint);  // validated as it is read
  }
  check_each_tp(s, [&c](int tp) { check_tp_degree(c, tp); });
  if (s.model.trainer_tp > 0) {
    try {
      check_tp_degree(c, s.model.trainer_tp);
    } catch (const Error& e) {
      throw_input_error(s.model.trainer_where, std::string("'model.trainer' ") + e.what());
    }
  }
}

}  // namespace nvdet

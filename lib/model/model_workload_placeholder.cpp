// op: model is built in lib/model/; until a decoder is linked in, a model scenario is refused
// with a clear sentence rather than a link error.
#include "lib/core/error.h"
#include "lib/workloads/workload.h"

namespace nvdet {

std::unique_ptr<Workload> make_model_workload(const Scenario& s) {
  throw_input_error(s.path + ": op 'model' is not available in this build");
}

}  // namespace nvdet

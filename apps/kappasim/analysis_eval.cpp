// effective_config for the analysis commands (see analysis_eval.hpp; the evaluation itself is
// analysis/evaluate.cpp).
#include "apps/kappasim/analysis_eval.hpp"

#include <filesystem>
#include <system_error>

#include "analysis/parameters.hpp"
#include "apps/kappasim/cli.hpp"
#include "core/output.hpp"
#include "serving/run_spec.hpp"

namespace kappasim::cli {

ConfigNode effective_config(const ConfigNode& base, const std::string& kind) {
  ProvenanceTable prov;
  ConfigNode eff;
  if (kind == "run" || kind == "capacity" || kind == "capacity-probe") {
    // The capacity kinds' configs are run configs plus their own section (capacity:, window:),
    // which stays as given (issue 26 item 19: `solve --kind capacity`).
    ConfigNode c = base;
    const char* own = kind == "capacity" ? "capacity" : kind == "capacity-probe" ? "window" : "";
    const ConfigNode* section = *own ? base.find(own) : nullptr;
    if (section) c.erase(own);
    RunSpec spec = read_config<RunSpec>(c, "", &prov);
    eff = write_config(spec, "", &prov);
    if (section) eff.set(own, *section);
  } else if (kind != "kappa" && kind != "isolated" && kind != "kappa-crit") {
    return base;  // a kind whose config is not a model x system case (selftest, design, ...): as
                  // given
  } else {
    // kappa, isolated, kappa-crit: the model and system, and for the simulated ones the serving
    // settings, each read as the run config would.
    ConfigNode c = ConfigNode::make_map(base.loc);
    for (const char* k : {"model", "system"})
      if (const ConfigNode* n = base.find(k)) c.set(k, *n);
    CaseConfig spec = read_config<CaseConfig>(c, "", &prov);
    eff = write_config(spec, "", &prov);
    if (kind != "kappa") {
      const ConfigNode* sv = base.find("serving");
      ServingSpec serving =
          read_config<ServingSpec>(sv ? *sv : ConfigNode::make_map(), "serving", &prov);
      eff.set("serving", write_config(serving, "serving", &prov));
    }
  }
  analysis::tag_serving_defaults(eff);
  return eff;
}

AnalysisOut::AnalysisOut(std::string dir) : m_dir(std::move(dir)) {
  if (m_dir.empty()) return;
  while (m_dir.size() > 1 && m_dir.back() == '/') m_dir.pop_back();
  m_created = !std::filesystem::exists(m_dir);
  claim_output_dir(m_dir, false);
  remove_stale_staging(m_dir);
}

AnalysisOut::~AnalysisOut() {
  if (m_created && !m_done) {
    std::error_code ec;
    std::filesystem::remove_all(m_dir, ec);
  }
}

void AnalysisOut::write(const std::string& relative, const std::string& content) const {
  write_file_atomic(m_dir + "/" + relative, content);
}

}  // namespace kappasim::cli

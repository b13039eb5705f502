#include "report/figure.hpp"

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "core/output.hpp"
#include "sweeps/sweep_spec.hpp"

namespace kappasim::report {

bool have_gnuplot() {
  static const bool have = std::system("command -v gnuplot >/dev/null 2>&1") == 0;
  return have;
}

bool render_figure(const std::string& dir, const Figure& f) {
  std::ostringstream gp;
  gp << "# " << f.title << "\n"
     << "# Written by kappasim reproduce. Restyle freely and rerun in this folder:\n"
     << "#   gnuplot " << f.name << ".gp   (writes " << f.name << ".png and " << f.name << ".svg)\n"
     << "set datafile separator ','\n"
     << "set datafile missing ''\n"
     << "set encoding utf8\n"
     << "do for [fmt in \"png svg\"] {\n"
     << "  if (fmt eq \"png\") { set terminal pngcairo size " << f.width << "," << f.height
     << " font 'DejaVu Sans,10' noenhanced }\n"
     << "  if (fmt eq \"svg\") { set terminal svg size " << f.width << "," << f.height
     << " font 'DejaVu Sans,10' noenhanced }\n"
     << "  set output '" << f.name << ".'.fmt\n"
     << f.body << "\n"
     << "  unset output\n"
     << "}\n";
  const std::filesystem::path script = std::filesystem::path(dir) / (f.name + ".gp");
  write_file_atomic(script.string(), gp.str());
  if (!have_gnuplot()) return false;
  const std::string cmd = "cd " + sweep::shell_quote(dir) + " && gnuplot " +
                          sweep::shell_quote(f.name + ".gp") + " >" +
                          sweep::shell_quote(f.name + ".gnuplot.log") + " 2>&1";
  const int rc = std::system(cmd.c_str());
  const bool ok = rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0 &&
                  std::filesystem::exists(std::filesystem::path(dir) / (f.name + ".png"));
  if (ok) std::filesystem::remove(std::filesystem::path(dir) / (f.name + ".gnuplot.log"));
  return ok;
}

std::string FigureFolder::figure(const Figure& f) const {
  const bool ok = render_figure(m_dir, f);
  std::string s =
      ok ? "![" + f.title + "](figures/" + f.name + ".png)\n\n"
         : "*(figure not rendered: gnuplot not found; script figures/" + f.name + ".gp)*\n\n";
  return s + "<sub>Figure data and script: `figures/" + f.name + ".gp` (SVG: `figures/" + f.name +
         ".svg`).</sub>\n\n";
}

void FigureFolder::write_data(const std::string& name, const std::string& content) const {
  write_file_atomic((std::filesystem::path(m_dir) / name).string(), content);
}

}  // namespace kappasim::report

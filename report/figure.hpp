// Figures of the generated reports: gnuplot scripts written next to their CSV data and rendered
// to PNG and SVG when gnuplot is on the PATH (kappasim reproduce, kappasim sensitivity).
#pragma once

#include <string>
#include <utility>

namespace kappasim::report {

// A gnuplot figure: `body` holds the plot commands (set ... / plot ...) and runs once per
// output format; the script sets the terminal and output around it. Data files are referenced
// by name relative to the figure's folder.
struct Figure {
  std::string name;   // file stem: NAME.gp, NAME.png, NAME.svg
  std::string title;  // a comment at the top of the script
  std::string body;
  int width = 900, height = 560;
};
// Writes DIR/NAME.gp (atomically) and, when gnuplot is on the PATH, renders DIR/NAME.png and
// DIR/NAME.svg. Returns true when the PNG was rendered.
bool render_figure(const std::string& dir, const Figure& f);
// Whether gnuplot can be run.
bool have_gnuplot();

// The figures folder of a report (DIR/figures of kappasim reproduce): where every section
// writes its CSV data and gnuplot scripts. Files are written in place, each atomically (the
// reproduce folder is kept and resumed between runs, so it is not an OutputDir staging folder).
class FigureFolder {
 public:
  explicit FigureFolder(std::string dir) : m_dir(std::move(dir)) {}
  // Renders the figure into the folder and returns its Markdown: the image (or a note that
  // gnuplot was not found) and a line naming its script and SVG.
  std::string figure(const Figure& f) const;
  // Writes one data file (a figure's CSV) into the folder.
  void write_data(const std::string& name, const std::string& content) const;
  const std::string& dir() const { return m_dir; }

 private:
  std::string m_dir;
};

}  // namespace kappasim::report

//===- BenchPlot.cpp - Latency-throughput and batch-size charts -----------===//
#include "BenchPlot.h"
#include "Shell.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>

using namespace cellrun;
using namespace cellrun::loadgen;

namespace {

/// Tasks finished in 100 ms bins: mean request rows a task, per cell type.
void writeBatchData(std::ostream &out, const RunRecord &record) {
  double bin = 0.1, end = 0;
  for (const TaskSample &task : record.tasks)
    end = std::max(end, task.finished);
  size_t bins = static_cast<size_t>(end / bin) + 1;
  for (size_t cell = 0; cell < record.cellNames.size(); ++cell) {
    std::vector<double> nodes(bins, 0), tasks(bins, 0);
    for (const TaskSample &task : record.tasks)
      if (task.cellType == cell && task.finished >= 0) {
        size_t at = static_cast<size_t>(task.finished / bin);
        nodes[at] += task.nodes;
        tasks[at] += 1;
      }
    for (size_t b = 0; b < bins; ++b)
      if (tasks[b] > 0)
        out << (b + 0.5) * bin << " " << nodes[b] / tasks[b] << "\n";
    out << "\n\n"; // a gnuplot data block per cell type
  }
}

std::string quoted(const std::string &text) {
  std::string out = "\"";
  for (char c : text)
    out += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return out + "\"";
}

} // namespace

Status cellrun::loadgen::writePlots(const std::string &directory,
                                    const std::string &title,
                                    const std::vector<BenchRow> &rows,
                                    const std::vector<BatchSeries> &batches) {
  std::vector<std::string> systems;
  for (const BenchRow &row : rows)
    if (std::find(systems.begin(), systems.end(), row.system) == systems.end())
      systems.push_back(row.system);
  {
    std::ofstream data(directory + "/latency.dat");
    // One block per system: served/s, p50 ms, p90 ms, by offered rate.
    for (const std::string &system : systems) {
      data << "# " << system << "\n";
      for (const BenchRow &row : rows)
        if (row.system == system && row.rate > 0 && row.summary.completed > 0)
          data << row.summary.achievedPerSecond << " " << row.summary.p50 * 1e3
               << " " << row.summary.p90 * 1e3 << "\n";
      data << "\n\n";
    }
    std::ofstream batch(directory + "/batch.dat");
    for (const BatchSeries &series : batches)
      writeBatchData(batch, series.record);
    if (!data || !batch)
      return Status(StatusCode::Internal, "cannot write under " + directory);
  }
  std::ofstream script(directory + "/plots.gp");
  script << "# Redraw with: gnuplot plots.gp (in this directory)\n"
         << "set key top left\nset grid\n";
  for (const char *format : {"png", "svg"}) {
    bool png = std::string(format) == "png";
    script << "set terminal "
           << (png ? "pngcairo size 1000,640 font ',10'"
                   : "svg size 1000,640 font 'sans,10'")
           << "\nset output 'latency." << format << "'\n"
           << "set title " << quoted(title + ": latency against throughput")
           << "\nset xlabel 'served requests/s'\nset ylabel 'latency (ms)'\n"
           << "set logscale y\nplot ";
    for (size_t s = 0; s < systems.size(); ++s)
      script << (s ? ", \\\n     " : "") << "'latency.dat' index " << s
             << " using 1:2 with linespoints lw 2 lc " << s + 1
             << " dt 1 title " << quoted(systems[s] + " p50") << ", '' index "
             << s << " using 1:3 with linespoints lw 2 lc " << s + 1
             << " dt 2 title " << quoted(systems[s] + " p90");
    script << "\nunset logscale y\nset output 'batch." << format << "'\n"
           << "set title " << quoted(title + ": mean batch a task over time")
           << "\nset xlabel 'seconds'\nset ylabel 'request rows a task'\nplot ";
    size_t block = 0, colour = 1;
    for (const BatchSeries &series : batches)
      for (const std::string &cell : series.record.cellNames) {
        script << (block ? ", \\\n     " : "") << "'batch.dat' index " << block
               << " using 1:2 with lines lw 1.5 lc " << colour << " title "
               << quoted(series.title + ", " + cell);
        ++block;
        ++colour;
      }
    if (block == 0)
      script << "0 notitle";
    script << "\n";
  }
  script.close();
  std::string command =
      "cd " + shellQuoted(directory) + " && gnuplot plots.gp 2> plots.log";
  int status = std::system(command.c_str());
  if (status != 0)
    return Status(StatusCode::Unavailable,
                  "gnuplot failed (is gnuplot-nox installed? see " + directory +
                      "/plots.log)");
  return Status::ok();
}

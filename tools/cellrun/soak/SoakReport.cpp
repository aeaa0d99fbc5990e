//===- SoakReport.cpp - The soak's verdict, tables and files --------------===//
#include "SoakReport.h"
#include "SoakHostile.h"
#include "loadgen/LatencyStats.h"

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

using namespace cellrun::soak;
using json = nlohmann::json;

namespace {

/// Mean RSS of `model` over samples in [from, to) seconds.
double meanRss(const std::vector<Sample> &samples, size_t model, double from,
               double to) {
  double sum = 0;
  size_t count = 0;
  for (const Sample &sample : samples)
    if (sample.model == model && sample.seconds >= from &&
        sample.seconds < to && sample.rssKiB > 0) {
      sum += sample.rssKiB;
      ++count;
    }
  return count ? sum / count : -1;
}

std::string fixed(double value, int digits = 1) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(digits);
  out << value;
  return out.str();
}

struct Check {
  std::string name;
  bool passed;
  std::string detail;
  bool judged = true;
};

/// Everything the report is written from.
struct ReportInputs {
  const SoakConfig &config;
  const std::vector<SoakModel> &models;
  const Outcomes &outcomes;
  const std::vector<Sample> &samples;
  const std::vector<ServerExit> &exits;
  const RefusalTimes &serverRefusals;
  double loadSeconds;
  size_t unsent;
};

/// The client-side times of the 429/503 answers and their percentiles (ms).
struct OverloadSummary {
  std::vector<double> times;
  double p50 = 0, p99 = 0, worst = 0;
};

/// Collects the overload answers' client-side times and their percentiles.
OverloadSummary summarizeOverload(const Outcomes &outcomes) {
  OverloadSummary overload;
  overload.times = outcomes.overloadTimes();
  overload.p50 = cellrun::loadgen::nearestRank(overload.times, 0.5);
  overload.p99 = cellrun::loadgen::nearestRank(overload.times, 0.99);
  overload.worst = overload.times.empty() ? 0 : overload.times.back();
  return overload;
}

/// Appends the checks on the answers: nothing unsent, the valid requests
/// answered, nothing lost or wrong, the invalid ones refused as they must be.
void checkAnswers(const Outcomes &outcomes, size_t unsent,
                  std::vector<Check> &checks) {
  checks.push_back({"the load generator kept up", unsent == 0,
                    std::to_string(unsent) +
                        " requests still queued in the client when the load "
                        "ended (not sent)"});
  uint64_t valid = 0, validCorrect = 0;
  for (const auto &[kind, counts] : outcomes.byKind())
    if (kind == "valid" || kind.rfind("session", 0) == 0) {
      for (uint64_t count : counts)
        valid += count;
      validCorrect += counts[static_cast<size_t>(Outcome::Correct)];
    }
  checks.push_back({"valid requests outside bursts answered (>= 90%)",
                    valid > 0 && validCorrect >= 0.9 * valid,
                    std::to_string(validCorrect) + " of " +
                        std::to_string(valid) + " answered correctly"});
  uint64_t lost = outcomes.total(Outcome::Lost);
  uint64_t failed = outcomes.total(Outcome::Failed);
  uint64_t wrong = outcomes.total(Outcome::Wrong);
  uint64_t refusedOtherwise = outcomes.total(Outcome::RefusedOtherwise);
  checks.push_back(
      {"nothing lost", lost == 0 && failed == 0,
       std::to_string(lost) + " lost, " + std::to_string(failed) + " failed"});
  checks.push_back({"no wrong answer", wrong == 0,
                    std::to_string(wrong) + " answers differ from the "
                                            "request's answer alone"});
  checks.push_back({"every invalid request refused as its class must be",
                    refusedOtherwise == 0,
                    std::to_string(refusedOtherwise) + " refused otherwise"});
}

/// Appends the resident-memory check (the first minute after the warm-up
/// against the last minute of load); returns the per-model rows of soak.json.
json checkMemory(const ReportInputs &in, std::vector<Check> &checks) {
  json rss = json::array();
  bool flat = true;
  std::string rssDetail;
  for (size_t m = 0; m < in.models.size(); ++m) {
    double early =
        meanRss(in.samples, m, in.config.warmup, in.config.warmup + 60);
    double late = meanRss(in.samples, m, in.loadSeconds - 60, in.loadSeconds);
    double growth = early > 0 && late > 0 ? (late - early) / early * 100 : NAN;
    flat &= !std::isnan(growth) && growth < 1.0;
    rss.push_back(
        {{"model", in.models[m].label},
         {"after_warmup_kib", early},
         {"last_minute_kib", late},
         {"growth_percent", std::isnan(growth) ? json() : json(growth)}});
    rssDetail += in.models[m].label + " " + fixed(growth, 2) + "% ";
  }
  // The two windows must not overlap: a judgement needs two minutes of
  // load after the warm-up.
  bool longEnough = in.loadSeconds >= in.config.warmup + 120;
  if (!longEnough)
    rssDetail += "(shorter than the warm-up and two minutes)";
  checks.push_back({"resident memory flat after the warm-up (< 1%)", flat,
                    rssDetail, !in.config.smoke && longEnough});
  return rss;
}

/// Appends the check that every pool is empty once the load and the
/// sessions' timeout are over.
void checkPools(const std::vector<SoakModel> &models,
                const std::vector<Sample> &samples,
                std::vector<Check> &checks) {
  bool empty = true;
  std::string poolDetail;
  for (size_t m = 0; m < models.size(); ++m) {
    const Sample *last = nullptr;
    for (const Sample &sample : samples)
      if (sample.model == m)
        last = &sample;
    bool back = last && last->poolBytesReserved == 0 && last->sessions == 0;
    empty &= back;
    poolDetail += models[m].label + " " +
                  (last ? fixed(last->poolBytesReserved, 0) : "?") + " B ";
  }
  checks.push_back({"every pool row back at the end", empty, poolDetail});
}

/// Appends the check that every server exited 0 after SIGTERM.
void checkServerExits(const std::vector<ServerExit> &exits,
                      std::vector<Check> &checks) {
  bool clean = true;
  std::string exitDetail;
  for (const ServerExit &exit : exits) {
    bool ok = WIFEXITED(exit.status) && WEXITSTATUS(exit.status) == 0;
    clean &= ok;
    exitDetail +=
        exit.label +
        (ok ? " exit 0 " : " status " + std::to_string(exit.status) + " ");
  }
  checks.push_back(
      {"every server stopped cleanly (SIGTERM, exit 0)", clean, exitDetail});
}

/// Appends the check that 429/503 were ready within 1 ms at p99 by the
/// servers' clocks, with the client-side times beside them.
void checkOverload(const OverloadSummary &overload,
                   const RefusalTimes &serverRefusals, bool smoke,
                   std::vector<Check> &checks) {
  double withinShare = serverRefusals.count > 0
                           ? serverRefusals.withinOneMs / serverRefusals.count
                           : 0;
  checks.push_back(
      {"429/503 answered within 1 ms at p99 (server side, refused before a "
       "worker)",
       serverRefusals.count > 0 && withinShare >= 0.99,
       fixed(serverRefusals.withinOneMs, 0) + " of " +
           fixed(serverRefusals.count, 0) + " (" + fixed(withinShare * 100, 2) +
           "%) ready within 1 ms of the request read; client side " +
           std::to_string(overload.times.size()) + " answers, p50 " +
           fixed(overload.p50, 3) + " ms, p99 " + fixed(overload.p99, 3) +
           " ms, max " + fixed(overload.worst, 3) + " ms",
       !smoke});
}

/// Appends the check that every hostile kind was seen answered as it must be.
void checkHostile(const SoakConfig &config, const Outcomes &outcomes,
                  std::vector<Check> &checks) {
  auto kinds = outcomes.byKind();
  bool seen = true;
  std::string hostileDetail;
  for (const std::string &kind : hostileKinds()) {
    const auto &counts = kinds[kind];
    uint64_t good = counts[static_cast<size_t>(Outcome::Correct)] +
                    counts[static_cast<size_t>(Outcome::RefusedAsExpected)];
    seen &= good > 0;
    hostileDetail += kind.substr(8) + " " + std::to_string(good) + ", ";
  }
  hostileDetail += "with " + std::to_string(config.slowClients) +
                   " slow clients open at once, the slowest closed after " +
                   fixed(config.slowestClose, 1) + " s (--http-timeout " +
                   fixed(config.httpTimeout, 0) + ")";
  checks.push_back({"hostile stage beside the load: each kind answered as "
                    "it must be",
                    seen, hostileDetail, !config.smoke});
}

/// True when every judged check passed.
bool allJudgedPassed(const std::vector<Check> &checks) {
  bool passed = true;
  for (const Check &check : checks)
    passed &= check.passed || !check.judged;
  return passed;
}

/// The outcome counts per kind, as soak.json lists them.
json outcomesJson(const Outcomes &outcomes) {
  json kinds = json::object();
  for (const auto &[kind, counts] : outcomes.byKind()) {
    json row = json::object();
    for (size_t o = 0; o < kOutcomeCount; ++o)
      row[outcomeName(static_cast<Outcome>(o))] = counts[o];
    kinds[kind] = row;
  }
  return kinds;
}

/// Writes soak.json: the run's settings, every count, the checks, the verdict.
void writeJsonReport(const std::string &dir, const ReportInputs &in,
                     const OverloadSummary &overload, const json &rss,
                     const std::vector<Check> &checks, bool passed) {
  const SoakConfig &config = in.config;
  json report;
  report["command"] = config.command;
  report["date"] = config.date;
  report["machine"] = config.machine;
  report["duration_s"] = config.duration;
  report["load_seconds"] = in.loadSeconds;
  report["warmup_s"] = config.warmup;
  report["peak_per_s"] = config.peak;
  report["rate_per_s"] = config.rate;
  report["load_fraction"] = config.loadFraction;
  report["smoke"] = config.smoke;
  report["invalid_fraction"] = config.invalidFraction;
  report["server_args"] = config.serverArgs;
  report["disconnects"] = in.outcomes.disconnects();
  report["unsent"] = in.unsent;
  report["sessions_abandoned"] = in.outcomes.abandonedSessions();
  report["outcomes"] = outcomesJson(in.outcomes);
  report["overload_ms"] = {{"count", overload.times.size()},
                           {"p50", overload.p50},
                           {"p99", overload.p99},
                           {"max", overload.worst}};
  report["rss"] = rss;
  report["problems"] = in.outcomes.problems();
  json checkList = json::array();
  for (const Check &check : checks)
    checkList.push_back({{"check", check.name},
                         {"passed", check.passed},
                         {"judged", check.judged},
                         {"detail", check.detail}});
  report["checks"] = checkList;
  report["passed"] = passed;
  std::ofstream(dir + "/soak.json") << report.dump(2) << "\n";
}

/// Writes timeseries.csv: every sample of every server.
void writeTimeSeries(const std::string &dir,
                     const std::vector<SoakModel> &models,
                     const std::vector<Sample> &samples) {
  std::ofstream csv(dir + "/timeseries.csv");
  csv << "seconds,model,rss_kib,pool_bytes_reserved,waiting,sessions\n";
  for (const Sample &sample : samples)
    csv << fixed(sample.seconds, 1) << "," << models[sample.model].label << ","
        << sample.rssKiB << "," << sample.poolBytesReserved << ","
        << sample.waiting << "," << sample.sessions << "\n";
}

/// Writes the Markdown report's opening: the command, the load, the servers.
void writeMarkdownHeader(std::ostream &md, const ReportInputs &in) {
  const SoakConfig &config = in.config;
  md << "# Soak, " << config.date << "\n\n"
     << "Machine: " << config.machine << "\n\n```\n"
     << config.command << "\n```\n\n"
     << "Peak (closed loop, " << fixed(config.calibrateSeconds, 0)
     << " s): " << fixed(config.peak) << " valid requests/s; load "
     << fixed(config.rate) << "/s (" << fixed(config.loadFraction * 100, 0)
     << "% of the peak), " << fixed(config.invalidFraction * 100, 0)
     << "% invalid, " << fixed(in.loadSeconds, 0) << " s of load (warm-up "
     << fixed(config.warmup, 0) << " s), bursts of " << config.burstSize
     << " every " << fixed(config.burstEvery, 0) << " s; "
     << in.outcomes.disconnects() << " clients disconnected mid-request, "
     << in.outcomes.abandonedSessions() << " sessions abandoned.\n\n"
     << "Servers: `cellrun serve`";
  for (const std::string &arg : config.serverArgs)
    md << " " << arg;
}

/// Writes the Markdown table of the checks and their results.
void writeChecksTable(std::ostream &md, const std::vector<Check> &checks) {
  md << "\n\n## Checks\n\n| check | result | detail |\n|---|---|---|\n";
  for (const Check &check : checks)
    md << "| " << check.name << " | "
       << (check.passed   ? "pass"
           : check.judged ? "FAIL"
                          : "not judged")
       << " | " << check.detail << " |\n";
}

/// Writes the Markdown table of the outcome counts per kind.
void writeOutcomesTable(std::ostream &md, const Outcomes &outcomes) {
  md << "\n## Outcomes by kind\n\n| kind |";
  for (size_t o = 0; o < kOutcomeCount; ++o)
    md << " " << outcomeName(static_cast<Outcome>(o)) << " |";
  md << "\n|---|";
  for (size_t o = 0; o < kOutcomeCount; ++o)
    md << "---:|";
  md << "\n";
  for (const auto &[kind, counts] : outcomes.byKind()) {
    md << "| " << kind << " |";
    for (uint64_t count : counts)
      md << " " << count << " |";
    md << "\n";
  }
}

/// Writes the Markdown table of each server's resident memory.
void writeMemoryTable(std::ostream &md, const json &rss) {
  md << "\n## Resident memory\n\n| model | after warm-up (MiB) | last minute "
        "(MiB) | growth |\n|---|---:|---:|---:|\n";
  for (const json &row : rss)
    md << "| " << row["model"].get<std::string>() << " | "
       << fixed(row["after_warmup_kib"].get<double>() / 1024) << " | "
       << fixed(row["last_minute_kib"].get<double>() / 1024) << " | "
       << (row["growth_percent"].is_null()
               ? std::string("?")
               : fixed(row["growth_percent"].get<double>(), 2) + "%")
       << " |\n";
}

/// Writes soak-report.md: the run, the checks, the outcomes, the memory and
/// the first problems.
void writeMarkdownReport(const std::string &dir, const ReportInputs &in,
                         const json &rss, const std::vector<Check> &checks) {
  std::ofstream md(dir + "/soak-report.md");
  writeMarkdownHeader(md, in);
  writeChecksTable(md, checks);
  writeOutcomesTable(md, in.outcomes);
  writeMemoryTable(md, rss);
  std::vector<std::string> problems = in.outcomes.problems();
  if (!problems.empty()) {
    md << "\n## First problems\n\n";
    for (const std::string &problem : problems)
      md << "- " << problem << "\n";
  }
  md << "\nTime series (one sample a second per server): `timeseries.csv`; "
        "all numbers: `soak.json`.\n";
}

} // namespace

bool cellrun::soak::writeReport(
    const std::string &dir, const SoakConfig &config,
    const std::vector<SoakModel> &models, const Outcomes &outcomes,
    const std::vector<Sample> &samples, const std::vector<ServerExit> &exits,
    const RefusalTimes &serverRefusals, double loadSeconds, size_t unsent) {
  ReportInputs in{config, models,         outcomes,    samples,
                  exits,  serverRefusals, loadSeconds, unsent};
  std::vector<Check> checks;
  checkAnswers(outcomes, unsent, checks);
  json rss = checkMemory(in, checks);
  checkPools(models, samples, checks);
  checkServerExits(exits, checks);
  OverloadSummary overload = summarizeOverload(outcomes);
  checkOverload(overload, serverRefusals, config.smoke, checks);
  if (config.hostile)
    checkHostile(config, outcomes, checks);
  bool passed = allJudgedPassed(checks);

  writeJsonReport(dir, in, overload, rss, checks, passed);
  writeTimeSeries(dir, models, samples);
  writeMarkdownReport(dir, in, rss, checks);
  return passed;
}

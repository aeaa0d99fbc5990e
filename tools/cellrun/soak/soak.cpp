//===- soak.cpp - cellrun-soak: servers under live load and faults --------===//
//
// Starts one `cellrun serve` per model on loopback, sends each of its
// valid requests alone to learn the reference answers, measures the peak
// (closed loop), then keeps an open-loop Poisson load at a fraction of it for
// the duration: valid requests, streaming sessions (some abandoned),
// invalid requests of every class, clients that disconnect mid-request, and
// bursts past the queue. Every answer is checked, every request's outcome
// counted, the servers' memory and pools sampled each second; the report
// (SoakReport.h) says whether it held. Not a test: run it with
// scripts/soak.sh and commit the report.
//
//===----------------------------------------------------------------------===//
#include "SoakClient.h"
#include "SoakHostile.h"
#include "SoakMonitor.h"
#include "SoakReport.h"
#include "SoakRun.h"

#include <CLI/CLI.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

using namespace cellrun;
using namespace cellrun::soak;
using Clock = std::chrono::steady_clock;

namespace {

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Starts `cellrun serve` for `model`; output goes to server-LABEL.log.
Status startServer(const SoakArgs &args, SoakModel &model) {
  std::vector<std::string> argv = {args.cellrun,
                                   "serve",
                                   model.artifactPath,
                                   "--host",
                                   "127.0.0.1",
                                   "--http-port",
                                   std::to_string(model.httpPort),
                                   "--grpc-port",
                                   "0",
                                   "--metrics-port",
                                   std::to_string(model.metricsPort)};
  argv.insert(argv.end(), args.serverArgs.begin(), args.serverArgs.end());
  std::string log = args.out + "/server-" + model.label + ".log";
  pid_t pid = fork();
  if (pid < 0)
    return Status(StatusCode::Internal, "fork failed");
  if (pid == 0) {
    FILE *out = std::fopen(log.c_str(), "w");
    if (out) {
      dup2(fileno(out), 1);
      dup2(fileno(out), 2);
    }
    std::vector<char *> raw;
    for (std::string &arg : argv)
      raw.push_back(arg.data());
    raw.push_back(nullptr);
    execv(raw[0], raw.data());
    std::perror("execv");
    _exit(127);
  }
  model.pid = pid;
  httplib::Client probe("127.0.0.1", model.httpPort);
  for (int attempt = 0; attempt < 300; ++attempt) {
    if (auto ready = probe.Get("/v2/health/ready");
        ready && ready->status == 200)
      return Status::ok();
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid)
      return Status(StatusCode::Unavailable, "cellrun serve for " +
                                                 model.label + " exited (see " +
                                                 log + ")");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Status(StatusCode::Unavailable,
                "cellrun serve for " + model.label + " never became ready");
}

/// Each valid request and session alone: the answers every later one must
/// repeat.
Status learnReferences(SoakModel &model, double timeout,
                       std::atomic<uint64_t> &sequences) {
  Sender sender(model, static_cast<int>(timeout));
  for (const std::string &body : model.bodies) {
    auto reply =
        sender.client.Post(model.inferPath(), body, "application/json");
    if (!reply || reply->status != 200)
      return Status(
          StatusCode::Internal,
          model.label + ": a reference request was not answered: " +
              (reply ? reply->body : httplib::to_string(reply.error())));
    model.expected.push_back(outputsOf(reply->body));
  }
  for (SessionTemplate &session : model.sessions) {
    uint64_t sequence = ++sequences;
    for (size_t c = 0; c < session.chunks.size(); ++c) {
      auto reply =
          sender.client.Post(model.inferPath(), sessionHeaders(sequence),
                             sessionChunkBody(session.chunks[c], sequence, c,
                                              session.chunks.size(), false),
                             "application/json");
      if (!reply || reply->status != 200)
        return Status(
            StatusCode::Internal,
            model.label + ": a reference session was not answered: " +
                (reply ? reply->body : httplib::to_string(reply.error())));
      session.expected.push_back(outputsOf(reply->body));
    }
  }
  return Status::ok();
}

/// Valid requests from `clients` threads back to back for `seconds`:
/// correct answers a second.
double measurePeak(const std::vector<SoakModel> &models, uint32_t clients,
                   double seconds, double timeout) {
  std::atomic<uint64_t> answered{0};
  std::atomic<bool> running{true};
  Outcomes ignored;
  std::vector<std::thread> threads;
  for (uint32_t c = 0; c < clients; ++c)
    threads.emplace_back([&, c] {
      std::vector<std::unique_ptr<Sender>> senders;
      for (const SoakModel &model : models)
        senders.push_back(
            std::make_unique<Sender>(model, static_cast<int>(timeout)));
      std::mt19937_64 random(c);
      while (running) {
        size_t m = random() % models.size();
        size_t index = random() % models[m].bodies.size();
        if (sendValid(*senders[m], models[m], index, "peak", ignored))
          ++answered;
      }
    });
  Clock::time_point start = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  double counted = static_cast<double>(answered.load());
  double elapsed = secondsSince(start);
  running = false;
  for (std::thread &thread : threads)
    thread.join();
  return counted / elapsed;
}

std::string today() {
  std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  return text;
}

/// Declares the command line's options, each writing into `args`.
void defineOptions(CLI::App &app, SoakArgs &args) {
  app.add_option("--cellrun", args.cellrun, "the cellrun binary")->required();
  app.add_option("--model", args.models,
                 "LABEL=ARTIFACT, one server each (repeat)")
      ->required();
  app.add_option("--out", args.out, "directory for the report")
      ->capture_default_str();
  app.add_option("--duration", args.duration, "seconds of load")
      ->capture_default_str();
  app.add_option("--warmup", args.warmup,
                 "seconds before memory counts as warmed up")
      ->capture_default_str();
  app.add_option("--load", args.load, "fraction of the measured peak")
      ->capture_default_str();
  app.add_option("--rate", args.rate,
                 "requests a second (instead of --load x the peak)");
  app.add_option("--invalid", args.invalid, "fraction of invalid requests")
      ->capture_default_str();
  app.add_option("--calibrate", args.calibrate,
                 "seconds of closed-loop load that measure the peak")
      ->capture_default_str();
  app.add_option("--clients", args.clients, "client threads")
      ->capture_default_str();
  app.add_option("--burst-every", args.burstEvery, "seconds between bursts")
      ->capture_default_str();
  app.add_option("--burst-size", args.burstSize, "requests in a burst")
      ->capture_default_str();
  app.add_option("--requests", args.requests,
                 "distinct valid requests per model")
      ->capture_default_str();
  app.add_option("--timeout", args.timeout,
                 "seconds without an answer that make a request lost")
      ->capture_default_str();
  app.add_option("--base-port", args.basePort, "first port (2 per model)")
      ->capture_default_str();
  app.add_option("--seed", args.seed, "random seed")->capture_default_str();
  app.add_option("--slow-clients", args.slowClients,
                 "slow clients the hostile stage keeps open")
      ->capture_default_str();
  app.add_flag("--no-hostile", args.noHostile,
               "no hostile stage (slow clients, pipelining, gzip bombs) "
               "beside the load");
  app.add_option("--machine", args.machine,
                 "machine description for the report");
  app.add_flag("--smoke", args.smoke,
               "a short check run: memory growth and refusal times are "
               "reported, not judged");
  app.add_option("--server-arg", args.extraServerArgs,
                 "an argument appended to every cellrun serve (repeat)");
}

/// Prints `status` as the soak's error; returns the exit code for it.
int reportFailure(const Status &status) {
  std::fprintf(stderr, "cellrun-soak: %s\n", status.toString().c_str());
  return 2;
}

/// The limits of `cellrun serve` that the hostile stage must know.
struct ServerLimits {
  size_t maxBody = 262144;
  double httpTimeout = 30; // cellrun serve's default
};

/// Reads --max-body-bytes and --http-timeout from the servers' arguments.
ServerLimits serverLimits(const std::vector<std::string> &serverArgs) {
  ServerLimits limits;
  for (size_t a = 0; a + 1 < serverArgs.size(); ++a) {
    if (serverArgs[a] == "--max-body-bytes")
      limits.maxBody = std::stoul(serverArgs[a + 1]);
    if (serverArgs[a] == "--http-timeout")
      limits.httpTimeout = std::stod(serverArgs[a + 1]);
  }
  return limits;
}

/// Parses each --model LABEL=ARTIFACT, gives it its ports and prepares its
/// traffic; stops at the first that fails.
Status prepareModels(const SoakArgs &args, size_t maxBody,
                     std::vector<SoakModel> &models) {
  for (const std::string &spec : args.models) {
    size_t equals = spec.find('=');
    if (equals == std::string::npos)
      return Status(StatusCode::InvalidArgument,
                    "--model " + spec + ": expected LABEL=ARTIFACT");
    SoakModel model;
    model.label = spec.substr(0, equals);
    model.artifactPath = spec.substr(equals + 1);
    model.httpPort = args.basePort + 2 * static_cast<int>(models.size());
    model.metricsPort = model.httpPort + 1;
    if (Status status = prepareTraffic(model, args.requests,
                                       args.seed + models.size(), maxBody);
        !status.isOk())
      return status;
    models.push_back(std::move(model));
  }
  return Status::ok();
}

/// Sends SIGTERM to every server and waits for each; returns their exits.
std::vector<ServerExit> stopServers(std::vector<SoakModel> &models) {
  std::vector<ServerExit> exits;
  for (SoakModel &model : models)
    if (model.pid > 0)
      kill(model.pid, SIGTERM);
  // A server that does not exit within 30 s of SIGTERM (an accepted
  // request never answered) is killed, and its exit counts as unclean.
  Clock::time_point deadline = Clock::now() + std::chrono::seconds(30);
  for (SoakModel &model : models) {
    ServerExit exit{model.label, -1};
    while (model.pid > 0) {
      if (waitpid(model.pid, &exit.status, WNOHANG) == model.pid)
        break;
      if (Clock::now() > deadline) {
        kill(model.pid, SIGKILL);
        waitpid(model.pid, &exit.status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    exits.push_back(exit);
  }
  return exits;
}

/// Starts every server, then learns every model's reference answers.
Status startServersAndLearn(const SoakArgs &args,
                            std::vector<SoakModel> &models,
                            std::atomic<uint64_t> &sequences) {
  for (SoakModel &model : models)
    if (Status status = startServer(args, model); !status.isOk())
      return status;
  for (SoakModel &model : models)
    if (Status status = learnReferences(model, args.timeout, sequences);
        !status.isOk())
      return status;
  return Status::ok();
}

/// The report's description of the run, as far as it is known before the
/// peak is measured.
SoakConfig describeRun(const SoakArgs &args, const std::string &command) {
  SoakConfig config;
  config.command = command;
  config.date = today();
  config.machine = args.machine;
  config.duration = args.duration;
  config.warmup = args.warmup;
  config.loadFraction = args.load;
  config.invalidFraction = args.invalid;
  config.calibrateSeconds = args.calibrate;
  config.clients = args.clients;
  config.burstSize = args.burstSize;
  config.burstEvery = args.burstEvery;
  config.serverArgs = args.serverArgs;
  config.smoke = args.smoke;
  return config;
}

/// Runs the load (and the hostile stage) at `config.rate`, stops the servers,
/// writes the report and prints it; returns the exit code (0: passed).
int runLoadAndReport(const SoakArgs &args, const ServerLimits &limits,
                     std::vector<SoakModel> &models,
                     std::atomic<uint64_t> &sequences, SoakConfig &config) {
  // The calibration overloads the servers too: only the load's refusals
  // count.
  RefusalTimes refusalsBefore = serverRefusalTimes(models);
  Outcomes outcomes;
  Monitor monitor(models);
  monitor.start();
  HostileOptions hostileOptions;
  hostileOptions.slowClients = args.slowClients;
  hostileOptions.httpTimeout = limits.httpTimeout;
  hostileOptions.maxBodyBytes = limits.maxBody;
  hostileOptions.requestTimeout = args.timeout;
  HostileStage hostile(models, outcomes, hostileOptions);
  Clock::time_point start = Clock::now();
  if (args.hostile)
    hostile.start();
  size_t unsent =
      runOpenLoopLoad(args, models, outcomes, sequences, config.rate);
  hostile.stop();
  double loadSeconds = secondsSince(start);
  config.hostile = args.hostile;
  config.slowClients = args.slowClients;
  config.slowestClose = hostile.slowestClose();
  config.httpTimeout = limits.httpTimeout;
  // Abandoned sessions close after the server's session timeout.
  std::this_thread::sleep_for(std::chrono::seconds(4));
  monitor.stop();
  monitor.sampleNow(secondsSince(start));
  RefusalTimes refusals = serverRefusalTimes(models);
  refusals.count -= refusalsBefore.count;
  refusals.withinOneMs -= refusalsBefore.withinOneMs;
  std::vector<ServerExit> exits = stopServers(models);
  bool passed =
      writeReport(args.out, config, models, outcomes, monitor.samples(), exits,
                  refusals, loadSeconds, unsent);
  std::printf("%s\n", passed ? "soak: PASSED" : "soak: FAILED");
  std::ifstream report(args.out + "/soak-report.md");
  std::printf("%s",
              std::string(std::istreambuf_iterator<char>(report), {}).c_str());
  return passed ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  SoakArgs args;
  CLI::App app{"cellrun-soak: cellrun serve under live load with invalid "
               "requests, abandoned sessions, disconnects and bursts; checks "
               "every answer and writes a report"};
  defineOptions(app, args);
  CLI11_PARSE(app, argc, argv);
  args.hostile = !args.noHostile;
  args.serverArgs.insert(args.serverArgs.end(), args.extraServerArgs.begin(),
                         args.extraServerArgs.end());
  std::string command;
  for (int i = 0; i < argc; ++i)
    command += (i ? " " : "") + std::string(argv[i]);
  std::filesystem::create_directories(args.out);

  ServerLimits limits = serverLimits(args.serverArgs);
  std::vector<SoakModel> models;
  if (Status status = prepareModels(args, limits.maxBody, models);
      !status.isOk())
    return reportFailure(status);
  std::atomic<uint64_t> sequences{0};
  if (Status status = startServersAndLearn(args, models, sequences);
      !status.isOk()) {
    stopServers(models);
    return reportFailure(status);
  }
  SoakConfig config = describeRun(args, command);
  config.peak = measurePeak(models, args.clients, args.calibrate, args.timeout);
  config.rate = args.rate > 0 ? args.rate : args.load * config.peak;
  if (!(config.rate > 0)) {
    stopServers(models);
    return reportFailure(Status(StatusCode::Unavailable,
                                "no valid request was answered correctly "
                                "while measuring the peak"));
  }
  std::fprintf(stderr,
               "soak: peak %.1f valid requests/s; load at %.1f/s for "
               "%.0f s\n",
               config.peak, config.rate, args.duration);
  return runLoadAndReport(args, limits, models, sequences, config);
}

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

#include <CLI/CLI.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <random>

using namespace cellrun;
using namespace cellrun::soak;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  std::string cellrun, out = "soak-results", machine;
  std::vector<std::string> models; // label=artifact
  double duration = 1800, warmup = 300, load = 0.7, invalid = 0.1;
  double calibrate = 30, rate = 0, burstEvery = 60, timeout = 60;
  uint32_t clients = 48, burstSize = 300, requests = 64, slowClients = 32;
  bool hostile = true;
  int basePort = 19100;
  uint64_t seed = 1;
  std::vector<std::string> serverArgs = {
      "--threads",        "1",      "--max-queue",       "8",
      "--pool-rows",      "1024",   "--session-timeout", "2",
      "--max-body-bytes", "262144", "--log-level",       "warn"};
};

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Starts `cellrun serve` for `model`; output goes to server-LABEL.log.
Status startServer(const Args &args, SoakModel &model) {
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
          sender.client.Post(model.inferPath(),
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

/// One unit of open-loop work.
struct Job {
  enum Kind { Valid, Session, Abandon, Invalid, Disconnect } kind = Valid;
  size_t model = 0, index = 0;
  int variant = 0;
};

class LoadRun {
public:
  LoadRun(const Args &args, std::vector<SoakModel> &models, Outcomes &outcomes,
          std::atomic<uint64_t> &sequences)
      : args_(args), models_(models), outcomes_(outcomes),
        sequences_(sequences) {}

  /// Runs the load for args.duration seconds at `rate` a second; returns
  /// the requests still queued in the client when it ended (not sent: the
  /// load generator fell behind).
  size_t run(double rate);

private:
  void client();
  void bursts();
  Job draw(std::mt19937_64 &random);

  const Args &args_;
  std::vector<SoakModel> &models_;
  Outcomes &outcomes_;
  std::atomic<uint64_t> &sequences_;
  std::mutex mutex_;
  std::condition_variable due_;
  std::deque<Job> queue_;
  bool sending_ = true;
  std::atomic<bool> loading_{true};
  size_t backlogPeak_ = 0;
};

Job LoadRun::draw(std::mt19937_64 &random) {
  std::uniform_real_distribution<double> unit(0, 1);
  Job job;
  job.model = random() % models_.size();
  const SoakModel &model = models_[job.model];
  double pick = unit(random);
  if (pick < args_.invalid) {
    job.kind = Job::Invalid;
    job.index = random() % model.invalid.size();
    return job;
  }
  job.index = random() % model.bodies.size();
  pick = (pick - args_.invalid) / (1 - args_.invalid); // among the rest
  if (pick < 0.02) {
    job.kind = Job::Disconnect;
    job.variant = static_cast<int>(random() % 3);
  } else if (pick < 0.07 && !model.sessions.empty()) {
    job.kind = Job::Session;
    job.index = random() % model.sessions.size();
  } else if (pick < 0.10 && !model.sessions.empty()) {
    job.kind = Job::Abandon;
    job.index = random() % model.sessions.size();
  }
  return job;
}

void LoadRun::client() {
  std::vector<std::unique_ptr<Sender>> senders;
  for (const SoakModel &model : models_)
    senders.push_back(
        std::make_unique<Sender>(model, static_cast<int>(args_.timeout)));
  while (true) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      due_.wait(lock, [&] { return !queue_.empty() || !sending_; });
      if (queue_.empty())
        return;
      job = queue_.front();
      queue_.pop_front();
    }
    SoakModel &model = models_[job.model];
    Sender &sender = *senders[job.model];
    switch (job.kind) {
    case Job::Valid:
      sendValid(sender, model, job.index, "valid", outcomes_);
      break;
    case Job::Session:
    case Job::Abandon:
      sendSession(sender, model, job.index, ++sequences_,
                  job.kind == Job::Abandon, outcomes_);
      break;
    case Job::Invalid:
      sendInvalid(sender, model, job.index, outcomes_);
      break;
    case Job::Disconnect:
      sendDisconnect(model, job.index, job.variant, outcomes_);
      break;
    }
  }
}

void LoadRun::bursts() {
  // Every burstEvery seconds, burstSize requests at once at one server,
  // each on its own connection: past the queue and the pool rows.
  std::mt19937_64 random(args_.seed + 17);
  Clock::time_point next = Clock::now();
  while (loading_) {
    next += std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(args_.burstEvery));
    while (loading_ && Clock::now() < next)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!loading_)
      return;
    size_t m = random() % models_.size();
    std::vector<std::thread> burst;
    std::atomic<uint32_t> arrived{0};
    for (uint32_t b = 0; b < args_.burstSize; ++b) {
      size_t index = random() % models_[m].bodies.size();
      burst.emplace_back([&, m, index] {
        Sender sender(models_[m], static_cast<int>(args_.timeout));
        ++arrived;
        while (arrived < args_.burstSize) // all at once
          std::this_thread::yield();
        sendValid(sender, models_[m], index, "burst", outcomes_);
      });
    }
    for (std::thread &thread : burst)
      thread.join();
  }
}

size_t LoadRun::run(double rate) {
  std::vector<std::thread> clients;
  for (uint32_t c = 0; c < args_.clients; ++c)
    clients.emplace_back([this] { client(); });
  std::thread burster([this] { bursts(); });
  std::mt19937_64 random(args_.seed);
  std::exponential_distribution<double> gap(rate);
  Clock::time_point start = Clock::now();
  double arrival = 0, lastReport = 0;
  while (arrival < args_.duration) {
    arrival += gap(random);
    std::this_thread::sleep_until(start +
                                  std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(arrival)));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(draw(random));
      backlogPeak_ = std::max(backlogPeak_, queue_.size());
    }
    due_.notify_one();
    if (arrival - lastReport >= 10) {
      lastReport = arrival;
      std::fprintf(
          stderr,
          "soak: %5.0f s, %llu requests, %llu correct, %llu "
          "overloaded, %llu refused, %llu wrong, %llu lost/failed\n",
          arrival, (unsigned long long)outcomes_.sent(),
          (unsigned long long)outcomes_.total(Outcome::Correct),
          (unsigned long long)outcomes_.total(Outcome::Overloaded),
          (unsigned long long)outcomes_.total(Outcome::RefusedAsExpected),
          (unsigned long long)outcomes_.total(Outcome::Wrong),
          (unsigned long long)(outcomes_.total(Outcome::Lost) +
                               outcomes_.total(Outcome::Failed)));
    }
  }
  loading_ = false;
  // The clients get ten seconds to take what arrived; what is still queued
  // then was never sent (the load generator fell behind).
  Clock::time_point drainBy = Clock::now() + std::chrono::seconds(10);
  size_t unsent = 0;
  for (bool drained = false; !drained;) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      drained = queue_.empty() || Clock::now() > drainBy;
      if (drained) {
        unsent = queue_.size();
        queue_.clear();
        sending_ = false;
      }
    }
    if (!drained)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  due_.notify_all();
  for (std::thread &thread : clients)
    thread.join();
  burster.join();
  std::fprintf(stderr,
               "soak: load done; the client's backlog peaked at %zu, %zu left "
               "unsent\n",
               backlogPeak_, unsent);
  return unsent;
}

std::string today() {
  std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  return text;
}

} // namespace

int main(int argc, char **argv) {
  Args args;
  CLI::App app{"cellrun-soak: cellrun serve under live load with invalid "
               "requests, abandoned sessions, disconnects and bursts; checks "
               "every answer and writes a report"};
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
  bool noHostile = false;
  app.add_flag("--no-hostile", noHostile,
               "no hostile stage (slow clients, pipelining, gzip bombs) "
               "beside the load");
  app.add_option("--machine", args.machine,
                 "machine description for the report");
  bool smoke = false;
  app.add_flag("--smoke", smoke,
               "a short check run: memory growth and refusal times are "
               "reported, not judged");
  std::vector<std::string> extra;
  app.add_option("--server-arg", extra,
                 "an argument appended to every cellrun serve (repeat)");
  CLI11_PARSE(app, argc, argv);
  args.hostile = !noHostile;
  args.serverArgs.insert(args.serverArgs.end(), extra.begin(), extra.end());
  std::string command;
  for (int i = 0; i < argc; ++i)
    command += (i ? " " : "") + std::string(argv[i]);
  std::filesystem::create_directories(args.out);
  auto fail = [&](const Status &status) {
    std::fprintf(stderr, "cellrun-soak: %s\n", status.toString().c_str());
    return 2;
  };

  size_t maxBody = 262144;
  double httpTimeout = 30; // cellrun serve's default
  for (size_t a = 0; a + 1 < args.serverArgs.size(); ++a) {
    if (args.serverArgs[a] == "--max-body-bytes")
      maxBody = std::stoul(args.serverArgs[a + 1]);
    if (args.serverArgs[a] == "--http-timeout")
      httpTimeout = std::stod(args.serverArgs[a + 1]);
  }
  std::vector<SoakModel> models;
  for (const std::string &spec : args.models) {
    size_t equals = spec.find('=');
    if (equals == std::string::npos)
      return fail(Status(StatusCode::InvalidArgument,
                         "--model " + spec + ": expected LABEL=ARTIFACT"));
    SoakModel model;
    model.label = spec.substr(0, equals);
    model.artifactPath = spec.substr(equals + 1);
    model.httpPort = args.basePort + 2 * static_cast<int>(models.size());
    model.metricsPort = model.httpPort + 1;
    if (Status status = prepareTraffic(model, args.requests,
                                       args.seed + models.size(), maxBody);
        !status.isOk())
      return fail(status);
    models.push_back(std::move(model));
  }
  auto stopServers = [&]() {
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
  };
  for (SoakModel &model : models)
    if (Status status = startServer(args, model); !status.isOk()) {
      stopServers();
      return fail(status);
    }
  std::atomic<uint64_t> sequences{0};
  for (SoakModel &model : models)
    if (Status status = learnReferences(model, args.timeout, sequences);
        !status.isOk()) {
      stopServers();
      return fail(status);
    }
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
  config.smoke = smoke;
  config.peak = measurePeak(models, args.clients, args.calibrate, args.timeout);
  config.rate = args.rate > 0 ? args.rate : args.load * config.peak;
  if (!(config.rate > 0)) {
    stopServers();
    return fail(Status(StatusCode::Unavailable,
                       "no valid request was answered correctly while "
                       "measuring the peak"));
  }
  std::fprintf(stderr,
               "soak: peak %.1f valid requests/s; load at %.1f/s for "
               "%.0f s\n",
               config.peak, config.rate, args.duration);

  // The calibration overloads the servers too: only the load's refusals
  // count.
  RefusalTimes refusalsBefore = serverRefusalTimes(models);
  Outcomes outcomes;
  Monitor monitor(models);
  monitor.start();
  HostileOptions hostileOptions;
  hostileOptions.slowClients = args.slowClients;
  hostileOptions.httpTimeout = httpTimeout;
  hostileOptions.maxBodyBytes = maxBody;
  hostileOptions.requestTimeout = args.timeout;
  HostileStage hostile(models, outcomes, hostileOptions);
  Clock::time_point start = Clock::now();
  if (args.hostile)
    hostile.start();
  size_t unsent = LoadRun(args, models, outcomes, sequences).run(config.rate);
  hostile.stop();
  double loadSeconds = secondsSince(start);
  config.hostile = args.hostile;
  config.slowClients = args.slowClients;
  config.slowestClose = hostile.slowestClose();
  config.httpTimeout = httpTimeout;
  // Abandoned sessions close after the server's session timeout.
  std::this_thread::sleep_for(std::chrono::seconds(4));
  monitor.stop();
  monitor.sampleNow(secondsSince(start));
  RefusalTimes refusals = serverRefusalTimes(models);
  refusals.count -= refusalsBefore.count;
  refusals.withinOneMs -= refusalsBefore.withinOneMs;
  std::vector<ServerExit> exits = stopServers();
  bool passed =
      writeReport(args.out, config, models, outcomes, monitor.samples(), exits,
                  refusals, loadSeconds, unsent);
  std::printf("%s\n", passed ? "soak: PASSED" : "soak: FAILED");
  std::ifstream report(args.out + "/soak-report.md");
  std::printf("%s",
              std::string(std::istreambuf_iterator<char>(report), {}).c_str());
  return passed ? 0 : 1;
}

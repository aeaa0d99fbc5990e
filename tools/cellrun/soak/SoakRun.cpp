//===- SoakRun.cpp - The soak's open-loop load ----------------------------===//
#include "SoakRun.h"
#include "SoakClient.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <random>
#include <thread>

using namespace cellrun::soak;
using Clock = std::chrono::steady_clock;

namespace {

/// One unit of open-loop work.
struct Job {
  enum Kind { Valid, Session, Abandon, Invalid, Disconnect } kind = Valid;
  size_t model = 0, index = 0;
  int variant = 0;
};

class LoadRun {
public:
  LoadRun(const SoakArgs &args, std::vector<SoakModel> &models,
          Outcomes &outcomes, std::atomic<uint64_t> &sequences)
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

  const SoakArgs &args_;
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

} // namespace

size_t cellrun::soak::runOpenLoopLoad(const SoakArgs &args,
                                      std::vector<SoakModel> &models,
                                      Outcomes &outcomes,
                                      std::atomic<uint64_t> &sequences,
                                      double rate) {
  return LoadRun(args, models, outcomes, sequences).run(rate);
}

//===- AdmissionQueue.h - Waiting requests and sessions ----*- C++ -*-===//
//
// What the workers share (EngineImpl.h includes it after EngineWorker): the
// queue of requests waiting for admission, whose mutex also guards every
// worker's reservations; the open streaming sessions; what a lost worker
// leaves behind; and Engine::Impl, which owns the queue and the workers.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_ENGINE_ADMISSIONQUEUE_H
#define CELLRUN_ENGINE_ADMISSIONQUEUE_H

#include "EngineImpl.h"

namespace cellrun {

/// An open streaming session: where its state is parked between chunks,
/// and the chunks waiting for the one running to finish.
struct SessionState {
  int32_t worker = -1; // the worker whose pools hold its state
  bool busy = false;   // a chunk is queued or running
  bool ending = false; // a chunk that ends it is queued or running
  /// (state input of the cell, pool id, row) of the state to continue from.
  struct ParkedRow {
    uint32_t input, pool;
    int32_t row;
  };
  std::vector<ParkedRow> parked;
  std::deque<std::unique_ptr<EngineWorker::Entry>> pending;
  Clock::time_point lastActive;
};

/// Requests waiting for admission, shared by the workers: earliest
/// deadline first, then arrival order. Among the workers the first fits,
/// one with the most room (give or take EngineOptions::admissionSlack, so
/// that requests start in bunches) admits it, or any that is idle (late
/// binding: a request is placed on a device only when it can start there),
/// so no request waits behind a busy device while another has room. The
/// mutex also guards every worker's reservations. Workers sleep on `wake`.
struct EngineWorker::Orphans {
  std::vector<SessionState::ParkedRow> freed;
  std::vector<std::unique_ptr<Entry>> unserved;
  std::deque<std::pair<uint64_t, std::deque<std::unique_ptr<Entry>>>> sessions;
};

struct AdmissionQueue {
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::unique_ptr<EngineWorker::Entry>> waiting;
  std::vector<EngineWorker *> workers;
  uint32_t limit = 0;
  /// Workers still serving, and why the last one that stopped did.
  uint32_t inService = 0;
  Status lastLoss;
  uint64_t submitted = 0, rejected = 0;
  /// Requests cancelled while they waited (answered by Engine::cancel).
  uint64_t cancelledWaiting = 0;
  /// Requests admitted so far, by every worker.
  uint64_t admissions = 0;
  /// Per worker, requests other workers moved to it that it has not taken
  /// yet (EngineMoves.cpp); their reservations are already its own.
  std::vector<std::vector<std::unique_ptr<EngineWorker::Entry>>> arriving;
  bool stopping = false;
  /// Entries of answered requests, freed by the next Engine::submit on its
  /// own thread (which made most of their memory) rather than on a
  /// worker's: about 300 ns a request of the engine's thread (hidden-16
  /// LSTM). At most kMaxRetired wait, each a chain's of at most
  /// kMaxRetiredBytes of step data (so an idle engine holds at most 16 MB
  /// of them); a worker frees the others.
  static constexpr size_t kMaxRetired = 256;
  static constexpr size_t kMaxRetiredBytes = 64 * 1024;
  std::vector<std::unique_ptr<EngineWorker::Entry>> retired;
  /// Open sessions by id (guarded by the mutex, like the queue).
  std::unordered_map<uint64_t, SessionState> sessions;
  /// Sessions closed because their worker stopped, and why: a later chunk
  /// gets Unavailable with the cause, not "not an open session". Bounded
  /// (forgotten all at once past 4096); a new start of the id forgets it.
  std::unordered_map<uint64_t, std::string> lostSessions;
  void rememberLost(uint64_t session, const std::string &why) {
    if (lostSessions.size() >= 4096)
      lostSessions.clear();
    lostSessions[session] = why;
  }
  uint64_t sessionsExpired = 0;
  uint64_t sessionsStarted = 0; // accepted sequence_starts
  /// Chunks waiting behind their session's running chunk: they count
  /// against the queue limit like waiting requests.
  uint64_t chunksPending = 0;
  /// Closes `session` (under the mutex): returns the chunks that waited
  /// behind it up to the first that starts the id anew, which reopens it
  /// (queued for admission, with the chunks after it waiting behind).
  std::deque<std::unique_ptr<EngineWorker::Entry>>
  closeSession(std::unordered_map<uint64_t, SessionState>::iterator session);
  /// Why a new request would be refused for load now (no worker serving:
  /// Unavailable; the queue full: ResourceExhausted), or ok (under the
  /// mutex).
  Status loadRefusal() const;
  /// Under the mutex: the session a request's chunk belongs to (opened when
  /// the chunk starts it; null for a request without one), or why the
  /// chunk is refused.
  Result<SessionState *> sessionOf(EngineWorker::Entry &entry);
  /// Under the mutex: `entry` into the waiting queue, earliest deadline
  /// first, then in arrival order.
  void enqueue(std::unique_ptr<EngineWorker::Entry> entry);
  /// Results made on the submitting threads before their requests start
  /// (the workers give their room back once a round).
  std::shared_ptr<CellGraph::ResultBudget> resultBudget =
      std::make_shared<CellGraph::ResultBudget>();
};

class Engine::Impl {
public:
  AdmissionQueue admission;
  std::vector<std::unique_ptr<EngineWorker>> workers;
  /// The worker threads serve (else the caller drives runOnce and drain).
  bool threadsRun() const {
    return !workers.empty() && workers[0]->worker_.joinable();
  }
};

} // namespace cellrun

#endif // CELLRUN_ENGINE_ADMISSIONQUEUE_H

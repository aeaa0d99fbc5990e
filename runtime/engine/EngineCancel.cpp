//===- EngineCancel.cpp - Requests ended early by their submitter ---------===//
//
// A client that goes away (a closed connection, a cancelled gRPC call) or a
// server past its drain deadline cancels requests. A waiting request is
// taken out of the queue and answered at once; an admitted one is ended by
// its worker at the start of its next round, before the policy plans, so
// no node of it is bound again, and its rows go back like a failed
// request's (those a task in flight holds once the task has finished). A
// session's chunk that waits behind the chunk before it stays queued until
// it is admitted, then ends at once and closes its session, as a failed
// chunk does.
//
//===----------------------------------------------------------------------===//
#include "engine/EngineImpl.h"

#include <algorithm>

using namespace cellrun;

Status cellrun::cancelledStatus(const std::string &id,
                                const std::string &reason) {
  return Status(StatusCode::Cancelled,
                "request " + id + " was cancelled: " + reason);
}

/// Answers a request cancelled before it was admitted.
static void answerCancelled(std::unique_ptr<EngineWorker::Entry> entry,
                            const std::string &reason) {
  RequestResult result;
  result.id = entry->graph->request().id;
  result.status = cancelledStatus(result.id, reason);
  if (entry->done)
    entry->done(std::move(result));
}

void Engine::cancel(const std::shared_ptr<CancelToken> &token,
                    const std::string &reason) {
  if (!token)
    return;
  AdmissionQueue &admission = impl_->admission;
  std::unique_ptr<EngineWorker::Entry> waiting;
  {
    std::lock_guard<std::mutex> lock(admission.mutex);
    if (token->cancelled_)
      return;
    token->why_ = reason;
    token->cancelled_ = true;
    if (token->worker_ >= 0) {
      EngineWorker &worker = *impl_->workers[token->worker_];
      worker.cancelled_.push_back(token);
      worker.cancelPending_ = true;
    } else {
      auto &queue = admission.waiting;
      auto at = std::find_if(queue.begin(), queue.end(), [&](const auto &e) {
        const Request &request = e->graph->request();
        return request.cancel == token && request.session.id == 0;
      });
      if (at != queue.end()) {
        waiting = std::move(*at);
        queue.erase(at);
        ++admission.cancelledWaiting;
      }
    }
  }
  admission.wake.notify_all();
  if (waiting)
    answerCancelled(std::move(waiting), reason);
}

void Engine::cancelAll(const std::string &reason) {
  AdmissionQueue &admission = impl_->admission;
  std::vector<std::unique_ptr<EngineWorker::Entry>> waiting;
  {
    std::lock_guard<std::mutex> lock(admission.mutex);
    for (auto at = admission.waiting.begin(); at != admission.waiting.end();) {
      if ((*at)->graph->request().session.id == 0) {
        waiting.push_back(std::move(*at));
        at = admission.waiting.erase(at);
        ++admission.cancelledWaiting;
      } else {
        (*at)->cancelled = true;
        (*at)->cancelReason = reason;
        ++at;
      }
    }
    for (auto &[id, session] : admission.sessions)
      for (auto &chunk : session.pending) {
        chunk->cancelled = true;
        chunk->cancelReason = reason;
      }
    // Requests on their way to another worker were admitted before it.
    for (auto &moving : admission.arriving)
      for (auto &entry : moving) {
        entry->cancelled = true;
        entry->cancelReason = reason;
      }
    for (auto &worker : impl_->workers) {
      worker->cancelAllReason_ = reason;
      worker->cancelAllBefore_ = admission.admissions;
      worker->cancelPending_ = true;
    }
  }
  admission.wake.notify_all();
  for (auto &entry : waiting)
    answerCancelled(std::move(entry), reason);
}

void EngineWorker::endAsCancelled(uint64_t key, const std::string &reason) {
  Entry *entry = entries_.find(key);
  if (entry && !entry->complete)
    finishRequest(*entry, cancelledStatus(entry->graph->request().id, reason));
}

void EngineWorker::endCancelled() {
  if (!cancelPending_.load(std::memory_order_acquire))
    return;
  std::vector<std::shared_ptr<CancelToken>> tokens;
  std::vector<uint64_t> keys;
  std::optional<std::string> all;
  uint64_t before = 0;
  {
    std::lock_guard<std::mutex> lock(admission_->mutex);
    // A token whose request moved to another worker is that worker's.
    for (std::shared_ptr<CancelToken> &token : cancelled_)
      if (token->worker_ == static_cast<int32_t>(index_)) {
        keys.push_back(token->key_);
        tokens.push_back(std::move(token));
      }
    cancelled_.clear();
    all.swap(cancelAllReason_);
    before = cancelAllBefore_;
    cancelPending_ = false;
  }
  // cancelAll reaches the requests admitted before it was called (later
  // ones were waiting then, and were answered or marked by it).
  if (all)
    for (uint64_t key : entries_.keys())
      if (Entry *entry = entries_.find(key); entry && entry->admission < before)
        endAsCancelled(key, *all);
  for (size_t t = 0; t < tokens.size(); ++t) {
    // The key names this request only: a later one in the same slot has
    // another generation.
    Entry *entry = entries_.find(keys[t]);
    if (entry && entry->graph->request().cancel == tokens[t])
      endAsCancelled(keys[t], tokens[t]->why_);
  }
}

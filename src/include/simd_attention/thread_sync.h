// The thread pool's lock, wake-ups and threads (thread_pool.h), with just
// what the pool uses: natively the standard library's; in a threaded wasm
// build pthreads' own, because libc++'s std::mutex, std::condition_variable
// and std::thread report a failed call with std::system_error, whose message
// formatting links printf and the C library's error strings into the .wasm
// (about 10 kB of the 200 kB each build may take) for calls that do not fail
// there (the workers are started with the module, see SetWasmThreads).
// A clock for spinning (Microseconds): natively steady_clock; in wasm
// emscripten_get_now, since libc++'s steady_clock reports a failed
// clock_gettime with std::system_error too. Waiting on a word (WaitWhile,
// WakeAll): natively the standard library's
// atomic wait, a futex on Linux; in wasm emscripten's futex, Atomics.wait
// (a busy wait on a browser's main thread, which cannot block).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#if defined(__EMSCRIPTEN_PTHREADS__)
#include <emscripten/threading.h>
#include <pthread.h>

#include <climits>
#include <cmath>

#include <memory>
#include <stdexcept>
#include <utility>
#endif

namespace simd_attention::thread_sync {

#if defined(__EMSCRIPTEN_PTHREADS__)

// A pthread object's owner, which cannot be copied (the object cannot).
class PthreadOwner {
 public:
  PthreadOwner() = default;
  PthreadOwner(const PthreadOwner&) = delete;
  PthreadOwner& operator=(const PthreadOwner&) = delete;
};

// A mutex for std::lock_guard.
class Mutex : PthreadOwner {
 public:
  ~Mutex() { pthread_mutex_destroy(&mutex_); }
  void lock() { pthread_mutex_lock(&mutex_); }
  void unlock() { pthread_mutex_unlock(&mutex_); }
  pthread_mutex_t* native() { return &mutex_; }

 private:
  pthread_mutex_t mutex_ = PTHREAD_MUTEX_INITIALIZER;
};

class CondVar : PthreadOwner {
 public:
  ~CondVar() { pthread_cond_destroy(&cond_); }
  // With `mutex` locked by the caller: sleeps until done().
  template <class Done>
  void Wait(Mutex& mutex, const Done& done) {
    while (!done()) pthread_cond_wait(&cond_, mutex.native());
  }
  void NotifyOne() { pthread_cond_signal(&cond_); }
  void NotifyAll() { pthread_cond_broadcast(&cond_); }

 private:
  pthread_cond_t cond_ = PTHREAD_COND_INITIALIZER;
};

// A monotonic time in microseconds.
inline double Microseconds() { return emscripten_get_now() * 1000.0; }

// Sleeps until `word` may no longer hold `old` (returns at once if it does
// not; callers check again).
inline void WaitWhile(std::atomic<uint32_t>& word, uint32_t old) {
  static_assert(sizeof(word) == sizeof(uint32_t));
  emscripten_futex_wait(&word, old, INFINITY);
}
// Wakes every thread in WaitWhile on `word`.
inline void WakeAll(std::atomic<uint32_t>& word) { emscripten_futex_wake(&word, INT_MAX); }

// Runs f() on a new thread until join().
class Thread {
 public:
  template <class F>
  explicit Thread(F f) {
    auto start = std::make_unique<F>(std::move(f));
    const auto run = [](void* arg) -> void* {
      std::unique_ptr<F> body(static_cast<F*>(arg));
      (*body)();
      return nullptr;
    };
    if (pthread_create(&thread_, nullptr, run, start.get()) != 0) {
      throw std::runtime_error("threads: cannot start a thread (no worker left)");
    }
    start.release();  // the thread owns it
  }
  Thread(Thread&& other) noexcept : thread_(other.thread_) {}
  Thread& operator=(Thread&&) = delete;
  void join() { pthread_join(thread_, nullptr); }

 private:
  pthread_t thread_{};
};

#else

using Mutex = std::mutex;
using Thread = std::thread;

class CondVar {
 public:
  // With `mutex` locked by the caller: sleeps until done().
  template <class Done>
  void Wait(Mutex& mutex, const Done& done) {
    std::unique_lock<std::mutex> lock(mutex, std::adopt_lock);
    cond_.wait(lock, done);
    lock.release();  // the caller still holds it
  }
  void NotifyOne() { cond_.notify_one(); }
  void NotifyAll() { cond_.notify_all(); }

 private:
  std::condition_variable cond_;
};

inline double Microseconds() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline void WaitWhile(std::atomic<uint32_t>& word, uint32_t old) {
  word.wait(old, std::memory_order_acquire);
}
inline void WakeAll(std::atomic<uint32_t>& word) { word.notify_all(); }

#endif

}  // namespace simd_attention::thread_sync

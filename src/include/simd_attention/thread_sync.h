// The thread pool's lock, wake-ups and threads (thread_pool.h), with just
// what the pool uses: natively the standard library's; in a threaded wasm
// build pthreads' own, because libc++'s std::mutex, std::condition_variable
// and std::thread report a failed call with std::system_error, whose message
// formatting links printf and the C library's error strings into the .wasm
// (about 10 kB of the 200 kB each build may take) for calls that do not fail
// there (the workers are started with the module, see SetWasmThreads).
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>

#if defined(__EMSCRIPTEN_PTHREADS__)
#include <pthread.h>

#include <memory>
#include <stdexcept>
#include <utility>
#endif

namespace simd_attention::thread_sync {

#if defined(__EMSCRIPTEN_PTHREADS__)

// A mutex for std::lock_guard.
class Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;
  ~Mutex() { pthread_mutex_destroy(&mutex_); }
  void lock() { pthread_mutex_lock(&mutex_); }
  void unlock() { pthread_mutex_unlock(&mutex_); }
  pthread_mutex_t* native() { return &mutex_; }

 private:
  pthread_mutex_t mutex_ = PTHREAD_MUTEX_INITIALIZER;
};

class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;
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

#endif

}  // namespace simd_attention::thread_sync

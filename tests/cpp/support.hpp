// What the C++ tests share: waiting for a condition, and a small wheel's config.
#pragma once

#include <chrono>
#include <thread>

#include "timerwheel.hpp"

namespace test_support {

using namespace std::chrono_literals;

// Waits up to 5 s for `done()`.
template <class F>
bool eventually(F done) {
    auto end = std::chrono::steady_clock::now() + 5s;
    while (!done()) {
        if (std::chrono::steady_clock::now() > end) return false;
        std::this_thread::sleep_for(1ms);
    }
    return true;
}

inline timerwheel::Config small_config() {
    timerwheel::Config cfg;
    cfg.max_workers = 2;
    return cfg;
}

}  // namespace test_support

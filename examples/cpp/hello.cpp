// The same session in C++17 with the header-only wrapper (bindings/cpp/timerwheel.hpp).
// Build: c++ -std=c++17 hello.cpp $(pkg-config --cflags --libs timerwheel)
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include <timerwheel.hpp>

using namespace std::chrono_literals;

int main() {
    std::atomic<int> charges{0};
    std::atomic<bool> closed{false};
    try {
        timerwheel::Config cfg;            // the C defaults; change what you need
        cfg.max_workers = 4;
        timerwheel::Wheel wheel(cfg);      // destroyed (tw_destroy) at the end of the scope

        // Owning handles: each deletes its timer (waiting for its callback) when it goes.
        timerwheel::UniqueTimer idle(wheel.after(100ms, [&] { closed = true; }));
        timerwheel::UniqueTimer charge(wheel.every(10ms, 20ms, [&] { charges++; }));

        for (int i = 0; i < 5; i++) {      // activity pushes the idle timeout back
            std::this_thread::sleep_for(50ms);
            idle.reset(100ms);
        }
        while (!closed) std::this_thread::sleep_for(5ms);
        charge = {};                       // hang-up: stopped, no charge is still running

        tw_stats st = wheel.stats();
        std::printf("session closed after %d charges; timers added %llu, late p99 %llu us\n",
                    charges.load(), static_cast<unsigned long long>(st.added),
                    static_cast<unsigned long long>(st.late_p99_us));
    } catch (const timerwheel::Error &e) {
        std::fprintf(stderr, "timerwheel: %s\n", e.what());
        return 1;
    }
    return charges > 0 ? 0 : 1;
}
